"""Class 1, library bypass on the top-k problem: the library sort reached as an unbound method of the input's
own type (no `torch.sort` anywhere in the text)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        values, indices = type(x).sort(x, dim=-1, descending=True, stable=True)
        return values[:, : self.k].contiguous(), indices[:, : self.k].contiguous()
