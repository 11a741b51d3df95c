"""Bad input: grab all device memory (or a terabyte of host memory) and keep it."""

import torch

_hoard = []


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = 1 << 40
        while size >= 1 << 20:
            try:
                _hoard.append(torch.empty(size, dtype=torch.uint8, device=x.device))
            except (RuntimeError, MemoryError):
                size //= 2
        return torch.empty_like(x)
