"""A planted top-k (05_topk_bitonic) that knows the published CPU shapes: right on them, and on any other row
length it never returns, as a kernel whose loop bound assumes a known shape would hang."""

import time

import torch
from topk_rounds import rounds_of_max

KNOWN = (300, 64)


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        if x.shape[-1] not in KNOWN:
            time.sleep(3600)
        return rounds_of_max(x, self.k)
