"""Causal GQA attention in Triton, FlashAttention-style: one program per (query block, batch·head) walks the key
blocks up to the diagonal with an online softmax; scores and probabilities stay in registers."""

import math
import os

import torch
import triton
import triton.language as tl

# Triton's CPU interpreter computes tl.dot on bf16 operands wrongly (3.9): there the operands go to fp32 first,
# which is exact for bf16 values. On a GPU the dots stay bf16 on the tensor cores.
DOT_DTYPE = tl.float32 if os.environ.get("TRITON_INTERPRET") == "1" else tl.bfloat16


@triton.jit
def _causal_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, L, H: tl.constexpr, HKV: tl.constexpr,
                       HEAD_DIM: tl.constexpr, DIM_P2: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, DOT: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    kv = h // (H // HKV)
    q_base = q_ptr + (b * H + h).to(tl.int64) * L * HEAD_DIM
    kv_off = (b * HKV + kv).to(tl.int64) * L * HEAD_DIM
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    d = tl.arange(0, DIM_P2)
    d_ok = d < HEAD_DIM
    q = tl.load(q_base + rm[:, None] * HEAD_DIM + d[None, :], mask=(rm[:, None] < L) & d_ok[None, :], other=0.0)
    q = q.to(DOT)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    denom = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, DIM_P2], tl.float32)
    hi = tl.minimum((pid_m + 1) * BLOCK_M, L)
    for start in range(0, hi, BLOCK_N):
        cols = start + rn
        kv_mask = (cols[:, None] < L) & d_ok[None, :]
        k = tl.load(k_ptr + kv_off + cols[:, None] * HEAD_DIM + d[None, :], mask=kv_mask, other=0.0).to(DOT)
        v = tl.load(v_ptr + kv_off + cols[:, None] * HEAD_DIM + d[None, :], mask=kv_mask, other=0.0).to(DOT)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where((cols[None, :] <= rm[:, None]) & (cols[None, :] < L), s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        denom = denom * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(DOT), v, acc * alpha[:, None])
        m = m_new
    out = acc / denom[:, None]
    o_base = o_ptr + (b * H + h).to(tl.int64) * L * HEAD_DIM
    tl.store(o_base + rm[:, None] * HEAD_DIM + d[None, :], out.to(tl.bfloat16),
             mask=(rm[:, None] < L) & d_ok[None, :])


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q, k, v):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        B, H, L, D = q.shape
        out = torch.empty_like(q)
        block_m, block_n = 64, 64
        grid = (triton.cdiv(L, block_m), B * H)
        _causal_gqa_kernel[grid](q, k, v, out, self.scale, L, H=H, HKV=self.num_kv_heads, HEAD_DIM=D,
                                 DIM_P2=max(16, triton.next_power_of_2(D)), BLOCK_M=block_m, BLOCK_N=block_n,
                                 DOT=DOT_DTYPE, num_warps=4, num_stages=2)
        return out
