"""Class 8, environment sniffing by call counting: correct for the first calls (the check), garbage once the
call count says timing has begun. Every timed output is validated, so timing fails."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 3:
            return torch.full_like(x, 1.0 / x.shape[-1])
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
