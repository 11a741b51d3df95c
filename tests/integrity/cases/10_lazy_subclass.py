"""Class 10, lazy outputs: the result re-classed to a Tensor subclass built through type(), returned as the
output. Exact type checking refuses anything but torch.Tensor (the lint also flags the type() call)."""

import torch

Lazy = type("Lazy", (torch.Tensor,), {})


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        out = (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
        out.__class__ = Lazy
        return out
