"""A solution of the toy scaled GEMM that calls the forbidden library GEMM through the @ operator."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, M: int, N: int, K: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(N, K))
        self.register_buffer("scale", torch.empty(N))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight.T) * self.scale
