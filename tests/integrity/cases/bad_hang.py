"""Bad input: the solution never returns from forward (a busy loop that ignores signals it could catch)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = 0
        while True:
            n += 1
