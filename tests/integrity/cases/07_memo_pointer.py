"""Class 7, memoisation keyed by data pointer only (nothing a lint can call suspicious on its own): correct on
first sight of each input buffer, stale afterwards. Caught at run time by the in-place overwrite probe, which
rewrites a timed input in place (same pointer) and re-checks the output."""

import torch

_cache: dict = {}


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        hit = _cache.get(key)
        if hit is None:
            e = torch.exp(x - x.amax(dim=-1, keepdim=True))
            hit = (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
            _cache[key] = hit
        return hit.clone()
