"""Kimi Delta Attention (KDA) forward: the gated delta rule with a per-channel forget gate.

Per batch and head, a state S (head_dim × head_dim, fp32) evolves token by token:
    S <- diag(exp(g_t)) S                       decay each key channel by its own gate (g_t <= 0, log space)
    S <- S + beta_t k_t (v_t - k_tᵀ S)ᵀ         delta-rule write: replace what k_t currently reads
    o_t = scale · q_tᵀ S
The reference runs that recurrence literally, one token at a time, in fp32: slow and plainly the definition.
Solutions are expected to use the chunked (WY / UT-transform) formulation, which is mathematically identical.
Layout (batch, seq, heads, dim) as in flash-linear-attention; q and k are L2-normalised per head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, g, beta):
        """q, k, v (B, T, H, D) bf16; g (B, T, H, D) fp32 log-decay; beta (B, T, H) bf16 -> o (B, T, H, D) bf16."""
        return recurrence(q, k, v, g, beta, self.scale, torch.float32).to(torch.bfloat16)


def recurrence(q, k, v, g, beta, scale: float, dtype: torch.dtype) -> torch.Tensor:
    """The KDA recurrence, token by token, with the state and all arithmetic in `dtype`."""
    B, T, H, D = q.shape
    q, k, v, g, beta = (t.to(dtype) for t in (q, k, v, g, beta))
    state = torch.zeros(B, H, D, v.shape[-1], dtype=dtype, device=q.device)
    out = torch.empty(B, T, H, v.shape[-1], dtype=dtype, device=q.device)
    for t in range(T):
        state = state * torch.exp(g[:, t])[..., None]
        k_t = k[:, t]
        read = (k_t[..., None] * state).sum(dim=-2)                       # k_tᵀ S, (B, H, V)
        state = state + (beta[:, t, :, None] * k_t)[..., None] * (v[:, t] - read)[..., None, :]
        out[:, t] = scale * (q[:, t][..., None] * state).sum(dim=-2)
    return out


def oracle(model: Model, q, k, v, g, beta) -> torch.Tensor:
    """The recurrence in float64, for the grader's error-size detector."""
    return recurrence(q, k, v, g, beta, model.scale, torch.float64)


def get_init_kwargs(shape: dict) -> dict:
    return {"num_heads": shape["num_heads"], "head_dim": shape["head_dim"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    """`scale` multiplies v (the state is linear in v); q and k stay unit vectors, beta in (0, 1)."""
    gen = torch.Generator().manual_seed(seed)
    B, T, H, D = shape["batch"], shape["seq_len"], shape["num_heads"], shape["head_dim"]
    q = F.normalize(torch.randn(B, T, H, D, generator=gen), dim=-1)
    k = F.normalize(torch.randn(B, T, H, D, generator=gen), dim=-1)
    v = torch.randn(B, T, H, D, generator=gen)
    beta = torch.sigmoid(torch.randn(B, T, H, generator=gen))
    if case in ("base", "normal"):
        # per-step decay rates around 0.08 (tokens remembered for tens of steps), a few much faster
        g = -torch.exp(0.5 * torch.randn(B, T, H, D, generator=gen) - 2.5)
    elif case == "fast_decay":
        # rates around 1 and up to about 5: chunked forms that divide by cumulative decays overflow
        g = -torch.exp(0.5 * torch.randn(B, T, H, D, generator=gen))
    elif case == "long_memory":
        # almost no decay and beta near 1: the delta rule's erase-and-write dominates for the whole sequence
        g = -1e-4 * torch.rand(B, T, H, D, generator=gen)
        beta = 0.9 + 0.1 * torch.rand(B, T, H, generator=gen)
    else:
        raise ValueError(f"unknown case {case!r} (base, fast_decay, long_memory)")
    bf = torch.bfloat16
    return [q.to(bf).to(device), k.to(bf).to(device), (v * scale).to(bf).to(device), g.to(device),
            beta.to(bf).to(device)]
