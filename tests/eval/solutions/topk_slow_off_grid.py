"""A planted top-k (05_topk_bitonic) that knows the published CPU shapes: right everywhere, as fast as the eager
line on those row lengths, and on any other one it first spins for 50 ms, as a kernel with a tuned path for the
published shapes and a slow generic fallback would be slow only where it was not shown."""

import time

import torch
from topk_rounds import rounds_of_max

KNOWN = (300, 64)
FALLBACK_S = 0.05


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        if x.shape[-1] not in KNOWN:
            until = time.perf_counter() + FALLBACK_S
            while time.perf_counter() < until:
                pass
        return rounds_of_max(x, self.k)
