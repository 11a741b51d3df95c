"""Planted for the sanitizer stage (docs/grading.md, "Sanitizer"): 04_kahan_softmax as the deck's honest Triton
solution, plus a CUDA kernel (torch.utils.cpp_extension.load_inline) launched on every call that reads a
__shared__ slot another warp writes, before the block's barrier: a real read-after-write race. The value read
early goes to a scratch buffer, never to the output, so every output is right (the checks pass); racecheck
reports the hazard. GPU only: benchmarks/gpu_sanitizer.py grades it."""

import torch
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

_PEEK_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void row_peek_kernel(const float* x, float* scratch, long vocab) {
    __shared__ float tile[64];
    int t = threadIdx.x;
    long row = blockIdx.x;
    tile[t] = t < vocab ? x[row * vocab + t] : 0.0f;
    float early = tile[(t + 32) % 64];  // the race: the other warp's slot, read before the barrier
    __syncthreads();
    float late = tile[(t + 32) % 64];
    scratch[row * 64 + t] = early - late;
}

torch::Tensor row_peek(torch::Tensor x, torch::Tensor scratch) {
    row_peek_kernel<<<x.size(0), 64, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), scratch.data_ptr<float>(), x.size(1));
    return scratch;
}
"""
_PEEK_CPP = "torch::Tensor row_peek(torch::Tensor x, torch::Tensor scratch);"
_peek = load_inline("kb_planted_row_peek", cpp_sources=_PEEK_CPP, cuda_sources=_PEEK_CUDA, functions=["row_peek"])


@triton.jit
def _two_sum_combine(sum_a, err_a, sum_b, err_b):
    """Knuth's TwoSum: the rounding error of sum_a + sum_b is carried exactly into the error term."""
    total = sum_a + sum_b
    b_part = total - sum_a
    lost = (sum_a - (total - b_part)) + (sum_b - b_part)
    return total, err_a + err_b + lost


@triton.jit
def _kahan_softmax_kernel(x_ptr, y_ptr, vocab, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    y_row = y_ptr + row.to(tl.int64) * stride_y
    offs = tl.arange(0, BLOCK)

    running_max = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, vocab, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < vocab, other=float("-inf"))
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)

    total = tl.zeros([BLOCK], tl.float32)
    compensation = tl.zeros([BLOCK], tl.float32)
    for start in range(0, vocab, BLOCK):
        x = tl.load(x_row + start + offs, mask=start + offs < vocab, other=float("-inf"))
        term = tl.exp(x - row_max) - compensation
        new_total = total + term
        compensation = (new_total - total) - term
        total = new_total
    # Kahan's compensation holds minus the lost low part, so each lane's value is total - compensation
    row_total, row_err = tl.reduce((total, -compensation), 0, _two_sum_combine)
    row_sum = row_total + row_err

    for start in range(0, vocab, BLOCK):
        mask = start + offs < vocab
        x = tl.load(x_row + start + offs, mask=mask, other=float("-inf"))
        tl.store(y_row + start + offs, tl.exp(x - row_max) / row_sum, mask=mask)


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, vocab = x.shape
        block = min(1024, triton.next_power_of_2(vocab))
        _kahan_softmax_kernel[(rows,)](x, y, vocab, x.stride(0), y.stride(0), BLOCK=block)
        _peek.row_peek(x, torch.empty(rows * 64, device=x.device, dtype=torch.float32))
        return y
