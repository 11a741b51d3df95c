"""Bad input: fork children that outlive the call (a small, bounded fork storm)."""

import os
import time

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(8):
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
        return torch.zeros_like(x)
