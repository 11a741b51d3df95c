"""Held-out property cases of 03_paged_attention (heldout.yaml): each function draws inputs of one structure from
`seed` alone, so `short_sequences(reference, shape, seed, "cpu")` replays a failing case."""

from __future__ import annotations

import torch


def short_sequences(reference, shape: dict, seed: int, device) -> list:
    """Sequences shorter than a page or just past one: lengths 1, page-1, page and page+1 are always present, the
    rest drawn in [1, page+1]. A kernel that assumes full pages, or at least one page per split, reads padding or
    divides by zero. (`seq_len` of the shape is not used: these lengths replace it.)"""
    gen = torch.Generator().manual_seed(seed)
    B, H, Hkv, D, P = (shape[k] for k in ("batch", "num_heads", "num_kv_heads", "head_dim", "page_size"))
    lengths = torch.randint(1, P + 2, (B,), generator=gen)
    edges = torch.tensor([1, P - 1, P, P + 1]).clamp(min=1)[:B]
    lengths[: len(edges)] = edges
    seq_lens = lengths[torch.randperm(B, generator=gen)].int()
    block_table, num_pages = reference._block_table(seq_lens, P, gen)
    q = torch.randn(B, H, D, generator=gen)
    k_cache = torch.randn(num_pages, P, Hkv, D, generator=gen)
    v_cache = torch.randn(num_pages, P, Hkv, D, generator=gen)
    bf = torch.bfloat16
    return [q.to(bf).to(device), k_cache.to(bf).to(device), v_cache.to(bf).to(device), block_table.to(device),
            seq_lens.to(device)]
