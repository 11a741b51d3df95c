"""Toy GEMM with a per-output-channel scale: y = (x @ W^T) * scale, fp32.

Written for this project's tests in the KernelBench-Hard layout: module-level shape globals that the harness
rebinds per shape, get_inputs() drawing from torch's global generator, get_init_inputs() positional.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, M: int, N: int, K: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(N, K) * 0.1)
        self.register_buffer("scale", torch.rand(N) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight.T) * self.scale


M = 8
N = 16
K = 32


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [M, N, K]
