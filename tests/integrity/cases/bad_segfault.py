"""Bad input: the solution crashes its process (a segmentation fault through ctypes) in forward."""

import ctypes

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctypes.string_at(0)
        return x
