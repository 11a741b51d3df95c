"""Class 11, in-process tampering with the timer: make elapsed_time report a microsecond and synchronize a
no-op, then do the real work slowly. Timing is taken with functions bound before the candidate loads."""

import torch

torch.cuda.Event.elapsed_time = lambda self, end: 0.001
torch.cuda.synchronize = lambda *args, **kwargs: None


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
