"""Held-out property cases of 06_sonic_moe_swiglu (heldout.yaml): each function draws inputs of one structure
from `seed` alone, so `tile_crossing_counts(reference, shape, seed, "cpu")` replays a failing case."""

from __future__ import annotations

import torch

TILE = 128
TARGETS = (0, 1, TILE - 1, TILE, TILE + 1, 2 * TILE - 1, 2 * TILE, 2 * TILE + 1)


def tile_crossing_counts(reference, shape: dict, seed: int, device) -> list:
    """The reference's rows, with rows moved between experts (the offsets changed, the rows kept in order) so that
    experts in a random order get a count from TARGETS (the first one 127, 128 or 129), each taken from or given to
    the unassigned expert with the most rows at the time; the last expert keeps what is left. A kernel that tiles
    groups by 128 rows and mishandles the partial or the extra tile fails here."""
    x, offsets = reference.get_inputs(shape, seed, "cpu")
    gen = torch.Generator().manual_seed(seed)
    counts = (offsets[1:] - offsets[:-1]).long()
    assigned: list[int] = []
    for expert in torch.randperm(len(counts), generator=gen).tolist():
        choices = TARGETS[2:5] if not assigned else TARGETS
        target = choices[int(torch.randint(len(choices), (1,), generator=gen))]
        others = counts.clone()
        others[assigned + [expert]] = -1
        bank = int(others.argmax())
        move = target - int(counts[expert])
        if others[bank] < 0 or counts[bank] - move < 0:
            continue
        counts[expert] += move
        counts[bank] -= move
        assigned.append(expert)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]).int()
    return [x.to(device), offsets.to(device)]
