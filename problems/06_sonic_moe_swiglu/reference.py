"""Grouped SwiGLU up-projection of a mixture-of-experts layer (the SonicMoE-style fused expert kernel).

Tokens arrive already permuted so that the rows routed to expert e are contiguous:
x[offsets[e]:offsets[e+1]]. For each expert, h = silu(x_e · W_gate[e]ᵀ) * (x_e · W_up[e]ᵀ). Expert loads are
uneven (some experts get no rows at all).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, experts: int, hidden: int, intermediate: int):
        super().__init__()
        # nn.Linear layout per expert: (out_features, in_features)
        self.gate_proj = torch.nn.Parameter((torch.randn(experts, intermediate, hidden) * hidden ** -0.5)
                                            .to(torch.bfloat16), requires_grad=False)
        self.up_proj = torch.nn.Parameter((torch.randn(experts, intermediate, hidden) * hidden ** -0.5)
                                          .to(torch.bfloat16), requires_grad=False)

    def forward(self, x: torch.Tensor, expert_offsets: torch.Tensor) -> torch.Tensor:
        """x (rows, hidden) bf16, expert_offsets (experts + 1,) int32 -> (rows, intermediate) bf16."""
        return experts_swiglu(self, x, expert_offsets, torch.float32).to(x.dtype)


def experts_swiglu(model: Model, x, expert_offsets, dtype: torch.dtype) -> torch.Tensor:
    """Each expert's rows through its gate and up projections, arithmetic in `dtype`."""
    out = torch.empty(x.shape[0], model.gate_proj.shape[1], dtype=dtype, device=x.device)
    bounds = expert_offsets.tolist()
    for e in range(model.gate_proj.shape[0]):
        rows = x[bounds[e]:bounds[e + 1]].to(dtype)
        gate = rows @ model.gate_proj[e].to(dtype).t()
        up = rows @ model.up_proj[e].to(dtype).t()
        out[bounds[e]:bounds[e + 1]] = F.silu(gate) * up
    return out


def oracle(model: Model, x, expert_offsets) -> torch.Tensor:
    """float64 experts, for the grader's error-size detector."""
    return experts_swiglu(model, x, expert_offsets, torch.float64)


def get_init_kwargs(shape: dict) -> dict:
    return {k: shape[k] for k in ("experts", "hidden", "intermediate")}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    """rows = tokens * top_k exactly; per-expert counts drawn from a (possibly skewed) routing distribution."""
    gen = torch.Generator().manual_seed(seed)
    rows, experts = shape["tokens"] * shape["top_k"], shape["experts"]
    if case in ("base", "normal", "heavy_tailed"):
        popularity = torch.exp(0.5 * torch.randn(experts, generator=gen))
    elif case == "skewed":
        # a few hot experts take most rows; a tenth of the experts get none
        popularity = torch.exp(2.0 * torch.randn(experts, generator=gen))
        popularity[torch.randperm(experts, generator=gen)[: max(1, experts // 10)]] = 0.0
    else:
        raise ValueError(f"unknown case {case!r} (base, skewed, heavy_tailed)")
    choice = torch.multinomial(popularity / popularity.sum(), rows, replacement=True, generator=gen)
    counts = torch.bincount(choice, minlength=experts)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]).int()
    x = torch.randn(rows, shape["hidden"], generator=gen)
    if case == "heavy_tailed":
        x = x * torch.where(torch.rand(1, shape["hidden"], generator=gen) < 0.01, 20.0, 1.0)
    return [(x * scale).to(torch.bfloat16).to(device), offsets.to(device)]
