"""KDA forward as a Triton recurrence: one program per (batch·head, block of value columns) keeps its slice of
the fp32 state in registers and walks the sequence token by token. Not chunked — exact and simple, and slow on
long sequences; the chunked form is the problem's real challenge."""

import torch
import triton
import triton.language as tl


@triton.jit
def _kda_recurrent_kernel(q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, o_ptr, T, H, scale,
                          D: tl.constexpr, D_P2: tl.constexpr, BLOCK_V: tl.constexpr):
    bh = tl.program_id(0)
    pid_v = tl.program_id(1)
    b = bh // H
    h = bh % H
    dk = tl.arange(0, D_P2)
    dv = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    k_ok = dk < D
    v_ok = dv < D
    state = tl.zeros([D_P2, BLOCK_V], tl.float32)
    for t in range(0, T):
        row = ((b * T + t) * H + h).to(tl.int64)
        k = tl.load(k_ptr + row * D + dk, mask=k_ok, other=0.0).to(tl.float32)
        q = tl.load(q_ptr + row * D + dk, mask=k_ok, other=0.0).to(tl.float32)
        g = tl.load(g_ptr + row * D + dk, mask=k_ok, other=0.0)
        v = tl.load(v_ptr + row * D + dv, mask=v_ok, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + row).to(tl.float32)
        state = state * tl.exp(g)[:, None]
        read = tl.sum(k[:, None] * state, axis=0)
        state = state + (beta * k)[:, None] * (v - read)[None, :]
        out = tl.sum(q[:, None] * state, axis=0) * scale
        tl.store(o_ptr + row * D + dv, out.to(tl.bfloat16), mask=v_ok)


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, g, beta):
        q, k, v, g, beta = (t.contiguous() for t in (q, k, v, g, beta))
        B, T, H, D = q.shape
        out = torch.empty_like(v)
        block_v = min(32, triton.next_power_of_2(D))
        grid = (B * H, triton.cdiv(D, block_v))
        _kda_recurrent_kernel[grid](q, k, v, g, beta, out, T, H, self.scale, D=D,
                                    D_P2=triton.next_power_of_2(D), BLOCK_V=block_v, num_warps=4)
        return out
