"""A wrong ModelNew for the toy softmax: its last column is off by 0.05, above atol + rtol·|expected| <= 0.02."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.softmax(x, dim=1)
        out[:, -1] += 0.05
        return out
