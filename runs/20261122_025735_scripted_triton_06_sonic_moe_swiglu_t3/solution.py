"""Grouped SwiGLU GEMM in Triton: a host-built tile schedule maps each program to (expert, block of that
expert's rows, block of output columns); gate and up accumulate side by side and the SwiGLU runs in the
epilogue, so the intermediate never touches memory."""

import os

import torch
import triton
import triton.language as tl

# Triton's CPU interpreter computes tl.dot on bf16 operands wrongly (3.9): there the operands go to fp32 first,
# which is exact for bf16 values. On a GPU the dot stays bf16 on the tensor cores.
DOT_DTYPE = tl.float32 if os.environ.get("TRITON_INTERPRET") == "1" else tl.bfloat16
BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32


@triton.jit
def _grouped_swiglu_kernel(x_ptr, wg_ptr, wu_ptr, out_ptr, tile_expert_ptr, tile_row_ptr, offsets_ptr,
                           hidden, inter, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, DOT: tl.constexpr):
    tile = tl.program_id(0)
    pid_n = tl.program_id(1)
    expert = tl.load(tile_expert_ptr + tile)
    row0 = tl.load(tile_row_ptr + tile)
    row_end = tl.load(offsets_ptr + expert + 1)
    rm = row0 + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < row_end
    n_ok = rn < inter
    w_base = expert.to(tl.int64) * inter * hidden
    gate = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, hidden, BLOCK_K):
        k_ok = k0 + rk < hidden
        x = tl.load(x_ptr + rm[:, None].to(tl.int64) * hidden + k0 + rk[None, :],
                    mask=m_ok[:, None] & k_ok[None, :], other=0.0).to(DOT)
        w_off = w_base + rn[:, None].to(tl.int64) * hidden + k0 + rk[None, :]
        w_mask = n_ok[:, None] & k_ok[None, :]
        wg = tl.load(wg_ptr + w_off, mask=w_mask, other=0.0).to(DOT)
        wu = tl.load(wu_ptr + w_off, mask=w_mask, other=0.0).to(DOT)
        gate = tl.dot(x, tl.trans(wg), gate)
        up = tl.dot(x, tl.trans(wu), up)
    h = gate / (1.0 + tl.exp(-gate)) * up
    out = out_ptr + rm[:, None].to(tl.int64) * inter + rn[None, :]
    tl.store(out, h.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :])


def tile_schedule(expert_offsets: torch.Tensor, block_m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For every BLOCK_M slab of every expert's rows: the expert and the slab's first row."""
    offsets = expert_offsets.long()
    counts = offsets[1:] - offsets[:-1]
    tiles = (counts + block_m - 1) // block_m
    tile_expert = torch.repeat_interleave(torch.arange(len(counts), device=offsets.device), tiles)
    first_tile = torch.cumsum(tiles, 0) - tiles
    slab = torch.arange(len(tile_expert), device=offsets.device) - first_tile[tile_expert]
    return tile_expert.int(), (offsets[tile_expert] + slab * block_m).int()


class Model(torch.nn.Module):
    def __init__(self, experts: int, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = torch.nn.Parameter(torch.zeros(experts, intermediate, hidden, dtype=torch.bfloat16),
                                         requires_grad=False)
        self.up_proj = torch.nn.Parameter(torch.zeros(experts, intermediate, hidden, dtype=torch.bfloat16),
                                         requires_grad=False)

    def forward(self, x: torch.Tensor, expert_offsets: torch.Tensor) -> torch.Tensor:
        inter, hidden = self.gate_proj.shape[1], self.gate_proj.shape[2]
        out = torch.empty(x.shape[0], inter, dtype=x.dtype, device=x.device)
        tile_expert, tile_row = tile_schedule(expert_offsets, BLOCK_M)
        if len(tile_expert) == 0:
            return out
        grid = (len(tile_expert), triton.cdiv(inter, BLOCK_N))
        _grouped_swiglu_kernel[grid](x.contiguous(), self.gate_proj, self.up_proj, out, tile_expert, tile_row,
                                     expert_offsets.int(), hidden, inter, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                     BLOCK_K=BLOCK_K, DOT=DOT_DTYPE, num_warps=4, num_stages=3)
        return out
