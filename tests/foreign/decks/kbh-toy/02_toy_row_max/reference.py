"""Toy row maximum: the largest value of every row and its index (fp32 values, int64 indices).

Written for this project's tests in the KernelBench-Hard layout.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.rows, self.cols = rows, cols
        self.register_buffer("_dummy", torch.zeros(1))

    def forward(self, x: torch.Tensor):
        values, indices = torch.topk(x, k=1, dim=-1)
        return values.squeeze(-1), indices.squeeze(-1)


ROWS = 4
COLS = 64


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [ROWS, COLS]
