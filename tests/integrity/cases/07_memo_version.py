"""Class 7, memoisation keyed by tensor identity and version counter: timed calls on a seen input return the
stored result. The lint only warns on ._version (weight caches use it too); new inputs that reuse a freed
tensor's pointer at version 0, and the in-place overwrite probe, get the stale answer and fail the checks."""

import torch

_cache: dict = {}


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), x._version, tuple(x.shape))
        if key not in _cache:
            e = torch.exp(x - x.amax(dim=-1, keepdim=True))
            _cache[key] = (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
        return _cache[key]
