"""Class 1, library bypass on top-k: torch.ops.aten.sort reached by folding getattr over a list of names
(functools.reduce), a chain the lint cannot resolve to a dotted name."""

import functools

import torch

_sort = functools.reduce(getattr, ["ops", "aten", "so" + "rt", "stable"], torch)


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        values, indices = _sort(x, stable=True, dim=-1, descending=True)
        return values[:, : self.k].contiguous(), indices[:, : self.k].contiguous()
