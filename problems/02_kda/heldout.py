"""Held-out property cases of 02_kda (heldout.yaml): each function draws inputs of one structure from `seed`
alone, so `long_history_large_values(reference, shape, seed, "cpu")` replays a failing case."""

from __future__ import annotations

import torch


def long_history_large_values(reference, shape: dict, seed: int, device) -> list:
    """The state carries everything written since the first token: decay rates drawn between 0 and 1e-4 per step
    (the long_memory distribution), beta near 1, over a sequence of many chunks, and v 16 times larger, so the
    state's entries grow with the history and a chunked form that loses precision across chunks shows it."""
    q, k, v, g, beta = reference.get_inputs(shape, seed, "cpu", case="long_memory", scale=16.0)
    gen = torch.Generator().manual_seed(seed ^ 0x5EED)
    # a few tokens forget fast, so the history is not one uniform block: chunk states must carry both regimes
    fast = torch.rand(g.shape[:-1], generator=gen) < 0.02
    g = torch.where(fast.unsqueeze(-1), -torch.rand(g.shape, generator=gen) * 3.0, g)
    return [q.to(device), k.to(device), v.to(device), g.to(device), beta.to(device)]
