"""Class 6, seed overfitting without any tell-tale call: a table of answers keyed by an input fingerprint
(as if recorded from the public seeds); anything unknown gets a cheap guess. The secret seed mixed into
every case means no fingerprint ever matches."""

import torch

_ANSWERS: dict[float, float] = {0.1234567: 0.5, -2.0345: 0.25}


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = round(float(x[0, 0]), 7)
        if key in _ANSWERS:
            return torch.full_like(x, _ANSWERS[key])
        return torch.full_like(x, 1.0 / x.shape[-1])
