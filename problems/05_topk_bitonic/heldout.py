"""Held-out property cases of 05_topk_bitonic (heldout.yaml): each function draws inputs of one structure from
`seed` alone, so `tied_maxima(reference, shape, seed, "cpu")` replays a failing case."""

from __future__ import annotations

import torch


def tied_maxima(reference, shape: dict, seed: int, device) -> list:
    """Every row's maximum repeated at more than k random columns (k+1 to 2k+1 of them), so the top-k is all one
    value and only the column order decides it; row 0 holds one value throughout."""
    gen = torch.Generator().manual_seed(seed)
    batch, n, k = shape["batch"], shape["n"], shape["k"]
    x = torch.randn(batch, n, generator=gen)
    top = x.max(dim=-1, keepdim=True).values + torch.rand(batch, 1, generator=gen)
    for row in range(batch):
        tied = int(torch.randint(k + 1, min(n, 2 * k + 1) + 1, (1,), generator=gen))
        x[row, torch.randperm(n, generator=gen)[:tied]] = top[row]
    x[0] = top[0]
    return [x.to(device)]
