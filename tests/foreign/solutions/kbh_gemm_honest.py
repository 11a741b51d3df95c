"""An honest solution of the toy scaled GEMM (KernelBench-Hard layout): broadcast-multiply and sum, no GEMM call."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, M: int, N: int, K: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(N, K))
        self.register_buffer("scale", torch.empty(N))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x[:, None, :] * self.weight[None]).sum(-1) * self.scale


M = 8
N = 16
K = 32


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [M, N, K]
