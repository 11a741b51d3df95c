"""Paged decode attention in Triton: one program per (sequence, KV head) serves that head's whole query group,
walking the sequence's pages through the block table with an online softmax in fp32."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _paged_decode_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, scale,
                         stride_table, GROUP: tl.constexpr, NUM_KV: tl.constexpr, HEAD_DIM: tl.constexpr,
                         PAGE: tl.constexpr, GROUP_P2: tl.constexpr, DIM_P2: tl.constexpr):
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    length = tl.load(lens_ptr + seq)
    g = tl.arange(0, GROUP_P2)
    d = tl.arange(0, DIM_P2)
    t = tl.arange(0, PAGE)
    g_ok = g < GROUP
    d_ok = d < HEAD_DIM
    heads = kv_head * GROUP + g
    q_rows = q_ptr + (seq * NUM_KV * GROUP + heads)[:, None] * HEAD_DIM + d[None, :]
    q = tl.load(q_rows, mask=g_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32) * scale

    m = tl.full([GROUP_P2], float("-inf"), tl.float32)
    denom = tl.zeros([GROUP_P2], tl.float32)
    acc = tl.zeros([GROUP_P2, DIM_P2], tl.float32)
    for start in range(0, length, PAGE):
        page = tl.load(table_ptr + seq * stride_table + start // PAGE).to(tl.int64)
        t_ok = start + t < length
        kv_rows = ((page * PAGE + t) * NUM_KV + kv_head)[:, None] * HEAD_DIM + d[None, :]
        kv_mask = t_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + kv_rows, mask=kv_mask, other=0.0).to(tl.float32)
        v = tl.load(v_ptr + kv_rows, mask=kv_mask, other=0.0).to(tl.float32)
        scores = tl.sum(q[:, None, :] * k[None, :, :], axis=2)           # (GROUP_P2, PAGE)
        scores = tl.where(t_ok[None, :], scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        denom = denom * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m = m_new
    out = acc / denom[:, None]
    out_rows = out_ptr + (seq * NUM_KV * GROUP + heads)[:, None] * HEAD_DIM + d[None, :]
    tl.store(out_rows, out.to(tl.bfloat16), mask=g_ok[:, None] & d_ok[None, :])


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_size: int):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q, k_cache, v_cache, block_table, seq_lens):
        q = q.contiguous()
        out = torch.empty_like(q)
        group = self.num_heads // self.num_kv_heads
        grid = (q.shape[0], self.num_kv_heads)
        _paged_decode_kernel[grid](
            q, k_cache.contiguous(), v_cache.contiguous(), block_table.contiguous(), seq_lens, out, self.scale,
            block_table.stride(0), GROUP=group, NUM_KV=self.num_kv_heads, HEAD_DIM=self.head_dim,
            PAGE=self.page_size, GROUP_P2=max(2, triton.next_power_of_2(group)),
            DIM_P2=triton.next_power_of_2(self.head_dim))
        return out
