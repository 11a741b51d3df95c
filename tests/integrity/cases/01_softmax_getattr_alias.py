"""Class 1, library bypass: the fused library softmax reached through an alias and a built attribute name."""

import torch
from torch.nn import functional as nnf

_op = getattr(nnf, "soft" + "max")


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _op(x.double(), dim=-1).float()
