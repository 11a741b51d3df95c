"""Causal grouped-query attention for prefill: softmax(q·kᵀ/√d + causal mask) · v, bf16 in and out.

Layout (batch, heads, seq, head_dim). Query head h attends with KV head h // (num_heads / num_kv_heads).
The reference materialises each head's full score matrix in fp32: slow, and plainly the definition.
"""

from __future__ import annotations

import math

import torch


# Tensor-core kernels round the probabilities to bf16 before P·V, an error of at most 2^-9 · Σ_j p_j |v_j| per
# output element; compare() allows twice that, plus a floor and a relative term for the output's own rounding.
P_ROUNDING = 2.0 ** -8
ATOL_FLOOR = 1e-4
RTOL = 2e-2


def attention(q, k, v, *, magnitude: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """fp32 causal GQA attention, head by head; with magnitude=True it mixes |v| instead (Σ_j p_ij |v_j|)."""
    num_heads, num_kv_heads, L, D = q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    group = num_heads // num_kv_heads
    causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
    out = torch.empty(q.shape, dtype=dtype, device=q.device)
    for b in range(q.shape[0]):
        for h in range(num_heads):
            kv = h // group
            scores = (q[b, h].to(dtype) @ k[b, kv].to(dtype).t()) / math.sqrt(D)
            weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
            values = v[b, kv].to(dtype)
            out[b, h] = weights @ (values.abs() if magnitude else values)
    return out


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q (B, H, L, D), k and v (B, H_kv, L, D), all bf16 -> (B, H, L, D) bf16."""
        return attention(q, k, v).to(q.dtype)


def oracle(model: Model, q, k, v) -> torch.Tensor:
    """float64 attention, for the grader's error-size detector."""
    return attention(q, k, v, dtype=torch.float64)


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
    elif case not in ("base", "normal"):
        raise ValueError(f"unknown case {case!r} (base, clustered)")
    bf = torch.bfloat16
    return [(q * scale).to(bf).to(device), (k * scale).to(bf).to(device), v.to(bf).to(device)]


def compare(out, expected, inputs, tolerance) -> list[str]:
    """Per element: |out - expected| <= ATOL_FLOOR + RTOL·|expected| + P_ROUNDING · Σ_j p_j |v_j|."""
    if type(out) is not torch.Tensor or out.shape != expected.shape or out.dtype != expected.dtype:
        return [f"output must be a bfloat16 tensor of shape {tuple(expected.shape)}"]
    q, k, v = inputs
    weighted = attention(q, k, v, magnitude=True)
    err = (out.float() - expected.float()).abs()
    excess = err - (ATOL_FLOOR + RTOL * expected.float().abs() + P_ROUNDING * weighted)
    if not (excess > 0).any():
        return []
    idx = tuple(int(i) for i in torch.unravel_index(excess.argmax(), expected.shape))
    return [f"{int((excess > 0).sum())} elements beyond the bf16-probability error bound; worst at {list(idx)}: "
            f"got {out[idx].item():.6g}, expected {expected[idx].item():.6g}, allowed "
            f"{ATOL_FLOOR:g} + {RTOL:g}·|expected| + 2^-8·Σp|v| = "
            f"{(err[idx] - excess[idx]).item():.3g}"]
