"""A deliberately wrong kernel for 04_kahan_softmax: a Triton softmax that drops the last element of every row
from the normaliser (a plausible off-by-one). gpu_validate.py grades it and expects a failure."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_softmax(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n, BLOCK):
        v = tl.load(x_ptr + row * n + start + offs, mask=start + offs < n, other=float("-inf"))
        m = tl.maximum(m, v)
    mx = tl.max(m, 0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        v = tl.load(x_ptr + row * n + start + offs, mask=start + offs < n - 1, other=float("-inf"))
        s += tl.exp(v - mx)
    total = tl.sum(s, 0)
    for start in range(0, n, BLOCK):
        v = tl.load(x_ptr + row * n + start + offs, mask=start + offs < n, other=float("-inf"))
        tl.store(y_ptr + row * n + start + offs, tl.exp(v - mx) / total, mask=start + offs < n)


class Model(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        _row_softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024)
        return y
