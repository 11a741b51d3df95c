"""Residual add + RMSNorm + per-token e4m3 quantisation in one Triton pass: one program holds a whole row in
registers, writes h, reduces the mean square and the amax, and writes the quantised row and its scale."""

import torch
import triton
import triton.language as tl


@triton.jit
def _round_to_bf16(v):
    """Nearest bf16 value (ties to even), kept in fp32 (portable to the CPU interpreter, whose cast truncates)."""
    bits = v.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _round_to_e4m3(v):
    """Nearest e4m3 value (ties to even) of |v| <= 448, kept in fp32: 3 mantissa bits in the normal range, a
    fixed 2^-9 step below 2^-6 (adding 1.5·2^14 makes fp32 round at exactly that step)."""
    bits = v.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFFF + ((bits >> 20) & 1)) & 0xFFF00000
    normal = bits.to(tl.float32, bitcast=True)
    subnormal = (v + 24576.0) - 24576.0
    return tl.where(tl.abs(v) < 0.015625, subnormal, normal)


@triton.jit
def _add_rmsnorm_quant_kernel(x_ptr, r_ptr, w_ptr, q_ptr, scale_ptr, h_ptr, hidden, eps,
                              BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ok = offs < hidden
    base = row.to(tl.int64) * hidden
    x = tl.load(x_ptr + base + offs, mask=ok, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + base + offs, mask=ok, other=0.0).to(tl.float32)
    h = _round_to_bf16(x + r)
    tl.store(h_ptr + base + offs, h.to(tl.bfloat16), mask=ok)
    mean_square = tl.sum(h * h, axis=0) / hidden
    w = tl.load(w_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    y = h * (1.0 / tl.sqrt(mean_square + eps)) * w
    scale = tl.maximum(tl.max(tl.abs(y), axis=0), 1e-12) / 448.0
    q = _round_to_e4m3(tl.minimum(tl.maximum(y / scale, -448.0), 448.0))
    tl.store(q_ptr + base + offs, q.to(tl.float8e4nv), mask=ok)
    tl.store(scale_ptr + row, scale)


class Model(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16), requires_grad=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        x, residual = x.contiguous(), residual.contiguous()
        tokens, hidden = x.shape
        q = torch.empty(tokens, hidden, dtype=torch.float8_e4m3fn, device=x.device)
        scale = torch.empty(tokens, 1, dtype=torch.float32, device=x.device)
        h = torch.empty_like(x)
        block = triton.next_power_of_2(hidden)
        _add_rmsnorm_quant_kernel[(tokens,)](x, residual, self.weight, q, scale, h, hidden, self.eps, BLOCK=block,
                                            num_warps=8 if block >= 4096 else 4)
        return q, scale, h
