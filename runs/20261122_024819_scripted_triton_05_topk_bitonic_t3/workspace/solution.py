"""Top-k by k rounds of selection in Triton: round j finds the largest (value, -index) pair that comes after
round j-1's winner in (value descending, index ascending) order. One program per row; O(k·n) but simple."""

import torch
import triton
import triton.language as tl


@triton.jit
def _topk_select_kernel(x_ptr, values_ptr, indices_ptr, n, k, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    offs = tl.arange(0, BLOCK)
    prev_value = float("inf")
    prev_index = -1
    for j in range(k):
        best_value = tl.full([BLOCK], float("-inf"), tl.float32)
        best_index = tl.full([BLOCK], 2147483647, tl.int32)
        for start in range(0, n, BLOCK):
            idx = start + offs
            v = tl.load(x_row + idx, mask=idx < n, other=float("-inf"))
            eligible = (idx < n) & ((v < prev_value) | ((v == prev_value) & (idx > prev_index)))
            better = eligible & ((v > best_value) | ((v == best_value) & (idx < best_index)))
            best_value = tl.where(better, v, best_value)
            best_index = tl.where(better, idx, best_index)
        win_value = tl.max(best_value, axis=0)
        win_index = tl.min(tl.where(best_value == win_value, best_index, 2147483647), axis=0)
        tl.store(values_ptr + row * k + j, win_value)
        tl.store(indices_ptr + row * k + j, win_index.to(tl.int64))
        prev_value = win_value
        prev_index = win_index


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        batch, n = x.shape
        values = torch.empty(batch, self.k, dtype=x.dtype, device=x.device)
        indices = torch.empty(batch, self.k, dtype=torch.int64, device=x.device)
        block = min(2048, triton.next_power_of_2(n))
        _topk_select_kernel[(batch,)](x, values, indices, n, self.k, x.stride(0), BLOCK=block)
        return values, indices
