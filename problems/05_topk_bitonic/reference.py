"""Top-k per row: the k largest values of each row in descending order, and their column indices.

Equal values are ordered by column, lowest first (what a stable descending sort gives), so the indices are
fully determined and compared exactly, like the values (which are input elements, so any rounding is a bug).
"""

from __future__ import annotations

import torch


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, n) float32 -> values (batch, k) float32 descending, indices (batch, k) int64."""
        values, indices = torch.sort(x, dim=-1, descending=True, stable=True)
        return values[:, : self.k].contiguous(), indices[:, : self.k].contiguous()


def get_init_kwargs(shape: dict) -> dict:
    return {"k": shape["k"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    batch, n = shape["batch"], shape["n"]
    if case in ("base", "normal"):
        x = torch.randn(batch, n, generator=gen)
    elif case == "ties":
        # few distinct values: the k-th place is shared by many columns
        x = torch.randint(0, 8, (batch, n), generator=gen).float()
    elif case == "presorted":
        # ascending rows: the winners sit at the very end of each row
        x = torch.sort(torch.randn(batch, n, generator=gen), dim=-1).values
    elif case == "heavy_tailed":
        x = torch.randn(batch, n, generator=gen) * torch.exp(3.0 * torch.randn(batch, n, generator=gen))
    else:
        raise ValueError(f"unknown case {case!r} (base, ties, presorted, heavy_tailed)")
    return [(x * scale).to(device)]

