"""Class 10, output type game: a float64 result where float32 is specified (equal in value under any
tolerance, twice the bytes written, and a dtype the candidate chose)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
