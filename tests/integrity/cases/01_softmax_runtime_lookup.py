"""Class 1, library bypass that no static lint can name: the op is found by scanning a module's namespace at
run time. Only the launch audit (the aten ops / kernels that actually ran) sees it."""

import torch
import torch.nn.functional as nnf

_op = next(v for k, v in sorted(vars(nnf).items()) if k.endswith("ftmax") and k[0] == "s")


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _op(x.double(), -1).float()
