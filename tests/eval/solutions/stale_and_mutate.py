"""Cheats in the check stage's own process: returns an uninitialised buffer and zeroes its input."""
import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        out = torch.empty(x.shape[0], self.weight.shape[0], device=x.device)
        x.zero_()
        return out
