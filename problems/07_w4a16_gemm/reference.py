"""W4A16 GEMM: bf16 activations times a 4-bit, group-quantised weight (GPTQ/AWQ-style asymmetric groups).

Packing: qweight is (N, K/2) uint8; byte j of row n holds column 2j in its low nibble and column 2j+1 in its high
nibble. Each group of `group_size` consecutive columns of a row has one bf16 scale and one bf16 zero point:
W[n, k] = (q[n, k] - zeros[n, k // G]) * scales[n, k // G], computed in fp32 and rounded to bf16 (as every
W4A16 kernel feeds bf16 tensor cores). y = x · Wᵀ in bf16, accumulated in fp32.
"""

from __future__ import annotations

import torch


def unpack_int4(qweight: torch.Tensor) -> torch.Tensor:
    """(N, K/2) uint8 -> (N, K) int values 0..15, low nibble first."""
    low = qweight & 0x0F
    high = qweight >> 4
    return torch.stack([low, high], dim=-1).reshape(qweight.shape[0], -1)


def dequantize(qweight, scales, zeros, group_size: int) -> torch.Tensor:
    q = unpack_int4(qweight).float()
    s = scales.float().repeat_interleave(group_size, dim=1)
    z = zeros.float().repeat_interleave(group_size, dim=1)
    return (q - z) * s


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        q = torch.randint(0, 16, (N, K), dtype=torch.uint8)
        self.register_buffer("qweight", q[:, 0::2] | (q[:, 1::2] << 4))
        groups = K // group_size
        # |q - z| is about 4.6 on average: scales put W near unit variance per output after the K-sum
        self.register_buffer("scales", ((0.5 + torch.rand(N, groups)) / (4.6 * K ** 0.5)).to(torch.bfloat16))
        self.register_buffer("zeros", (7.5 + torch.randn(N, groups)).clamp(0, 15).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (M, K) bf16 -> (M, N) bf16."""
        w = dequantize(self.qweight, self.scales, self.zeros, self.group_size).to(torch.bfloat16).float()
        return (x.float() @ w.t()).to(torch.bfloat16)


def oracle(model: Model, x: torch.Tensor) -> torch.Tensor:
    """float64 product of the same bf16-rounded weights, for the grader's error-size detector."""
    w = dequantize(model.qweight, model.scales, model.zeros, model.group_size).to(torch.bfloat16).double()
    return x.double() @ w.t()


def get_init_kwargs(shape: dict) -> dict:
    return {"N": shape["N"], "K": shape["K"], "group_size": shape["group_size"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["M"], shape["K"], generator=gen)
    if case == "heavy_tailed":
        # a few outlier channels, as in real LLM activations
        x = x * torch.where(torch.rand(1, shape["K"], generator=gen) < 0.01, 30.0, 1.0)
    elif case not in ("base", "normal"):
        raise ValueError(f"unknown case {case!r} (base, heavy_tailed)")
    return [(x * scale).to(torch.bfloat16).to(device)]
