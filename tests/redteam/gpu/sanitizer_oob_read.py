"""Planted for the sanitizer stage (docs/grading.md, "Sanitizer"): 04_kahan_softmax as the deck's honest Triton
solution, but the row-max pass also loads each element's right-hand neighbour under an off-by-one mask (`<=`): the
lane whose neighbour is element `vocab` reads one float past the row, past the end of the input on the last row,
whatever vocab is (a multiple of the block or not), and the value is masked away again. Every output is right (the
checks pass); memcheck reports an invalid __global__ read in the kernel. GPU only: benchmarks/gpu_sanitizer.py
grades it."""

import torch
import triton
import triton.language as tl


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
        # the planted bug: the neighbour's mask `<=` lets the lane at vocab - 1 load element `vocab`, one past the
        # row (past the tensor on the last row). The loop's last block always holds that lane (start <= vocab - 1
        # < start + BLOCK), so the read happens whether or not vocab is a multiple of BLOCK.
        neighbour = tl.load(x_row + start + offs + 1, mask=start + offs + 1 <= vocab, other=float("-inf"))
        neighbour = tl.where(start + offs + 1 < vocab, neighbour, float("-inf"))  # ... dropped: outputs stay right
        running_max = tl.maximum(running_max, tl.maximum(x, neighbour))
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
        return y
