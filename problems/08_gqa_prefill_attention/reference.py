"""Causal grouped-query attention for prefill: softmax(q·kᵀ/√d + causal mask) · v, bf16 in and out.

Layout (batch, heads, seq, head_dim). Query head h attends with KV head h // (num_heads / num_kv_heads).
The reference materialises each head's full score matrix in fp32: slow, and plainly the definition.
"""

from __future__ import annotations

import math

import torch


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q (B, H, L, D), k and v (B, H_kv, L, D), all bf16 -> (B, H, L, D) bf16."""
        group = self.num_heads // self.num_kv_heads
        L = q.shape[2]
        causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        out = torch.empty_like(q)
        for b in range(q.shape[0]):
            for h in range(self.num_heads):
                kv = h // group
                scores = (q[b, h].float() @ k[b, kv].float().t()) * self.scale
                scores = scores.masked_fill(~causal, float("-inf"))
                out[b, h] = (torch.softmax(scores, dim=-1) @ v[b, kv].float()).to(q.dtype)
        return out


def get_init_kwargs(shape: dict) -> dict:
    return {k: shape[k] for k in ("num_heads", "num_kv_heads", "head_dim")}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    B, H, Hkv, L, D = (shape[k] for k in ("batch", "num_heads", "num_kv_heads", "seq_len", "head_dim"))
    q = torch.randn(B, H, L, D, generator=gen)
    k = torch.randn(B, Hkv, L, D, generator=gen)
    v = torch.randn(B, Hkv, L, D, generator=gen)
    if case == "clustered":
        # attention sinks: queries share a direction that the first keys point along, as trained models'
        # first tokens do; every row then puts most of its weight on those keys
        shared = 0.3 * torch.randn(B, 1, 1, D, generator=gen)
        q = q + shared
        k[:, :, :4] += 3.0 * shared
    elif case == "heavy_tailed":
        v = v * torch.exp(1.5 * torch.randn(B, Hkv, L, 1, generator=gen))
    elif case not in ("base", "normal"):
        raise ValueError(f"unknown case {case!r} (base, clustered, heavy_tailed)")
    bf = torch.bfloat16
    return [(q * scale).to(bf).to(device), (k * scale).to(bf).to(device), v.to(bf).to(device)]
