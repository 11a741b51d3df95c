"""FP8 (e4m3) GEMM with per-row activation scales and per-channel weight scales, bf16 out.

y[m, n] = x_scale[m] * w_scale[n] * sum_k x[m, k] * w[n, k], with x and w in float8_e4m3fn. Every product of two
e4m3 values is exact in fp32, so the reference (fp32 accumulation) is exact up to the order of the sum.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


class Model(torch.nn.Module):
    """A linear layer whose weight is stored in e4m3 with one fp32 scale per output channel."""

    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", (torch.randn(N, K) * 2.0).clamp(-FP8_MAX, FP8_MAX).to(FP8))
        self.register_buffer("weight_scale", (0.5 + torch.rand(N)) * K ** -0.25)

    def forward(self, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        acc = x.float() @ self.weight.float().t()
        return (acc * x_scale * self.weight_scale[None, :]).to(torch.bfloat16)


def oracle(model: Model, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
    acc = x.double() @ model.weight.double().t()
    return acc * x_scale.double() * model.weight_scale.double()[None, :]


def get_init_kwargs(shape: dict) -> dict:
    return {"N": shape["N"], "K": shape["K"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    """x: (M, K) e4m3; x_scale: (M, 1) fp32. `scale` multiplies the activation scales (x itself saturates)."""
    gen = torch.Generator().manual_seed(seed)
    M, K = shape["M"], shape["K"]
    x = torch.randn(M, K, generator=gen) * 2.0
    row_scale = (0.5 + torch.rand(M, 1, generator=gen)) * K ** -0.25
    if case == "heavy_tailed":
        # activation outliers: a few channels and tokens hundreds of times larger, as in LLM activations
        x = x * torch.exp(1.5 * torch.randn(M, K, generator=gen))
    elif case == "skewed_scales":
        row_scale = row_scale * torch.exp(4.0 * torch.randn(M, 1, generator=gen))
    elif case not in ("base", "normal"):
        raise ValueError(f"unknown case {case!r} (base, heavy_tailed, skewed_scales)")
    x = x.clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return [x.to(device), (row_scale * scale).to(device)]
