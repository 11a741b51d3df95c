"""Class 2, stale memory: allocate the output without writing it, hoping the allocator hands back the block
that held the reference's result. Poisoned allocations (NaN) and a separate reference process defeat it."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
