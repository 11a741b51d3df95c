"""Class 1, library bypass with no torch name at all: the tensor's own softmax method called through
operator.methodcaller with a built method name."""

import operator

import torch

_call = operator.methodcaller("soft" + "max", -1)


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _call(x.double()).float()
