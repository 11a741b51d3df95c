"""An honest solution of the toy row maximum: amax and the first index holding it."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.register_buffer("_dummy", torch.zeros(1))

    def forward(self, x: torch.Tensor):
        values = torch.amax(x, dim=-1)
        positions = torch.arange(x.shape[-1], device=x.device).expand_as(x)
        hits = torch.where(x == values[:, None], positions, x.shape[-1])
        return values, torch.amin(hits, dim=-1)
