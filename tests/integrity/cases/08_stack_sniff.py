"""Class 8, environment sniffing: walk the caller's frames and compute properly only when a checker looks."""

import sys

import torch


def _checked() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if any(word in frame.f_code.co_name for word in ("check", "case", "compare")):
            return True
        frame = frame.f_back
    return False


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _checked():
            return torch.empty_like(x)
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
