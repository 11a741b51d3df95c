"""Paged-attention decode with grouped-query heads: one new query token per sequence against a paged KV cache.

The KV cache is a pool of fixed-size pages; each sequence owns a list of pages (its row of `block_table`, in
shuffled order, as a serving engine's allocator leaves them) and a length (`seq_lens`, ragged). Query head h reads
KV head h // (num_heads // num_kv_heads).
"""

from __future__ import annotations

import math

import torch


# Tensor-core kernels round the probabilities to bf16 before P·V, an error of at most 2^-9 · Σ_j p_j |v_j| per
# output element; compare() allows twice that, plus a floor and a relative term for the output's own rounding.
P_ROUNDING = 2.0 ** -8
ATOL_FLOOR = 1e-4
RTOL = 2e-2


def decode_attention(q, k_cache, v_cache, block_table, seq_lens, *, magnitude: bool = False,
                     dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """fp32 paged decode attention, sequence by sequence; with magnitude=True it mixes |v| (Σ_j p_j |v_j|)."""
    num_heads, (page_size, num_kv_heads, head_dim) = q.shape[1], k_cache.shape[1:]
    group = num_heads // num_kv_heads
    out = torch.empty(q.shape, dtype=dtype, device=q.device)
    for b in range(q.shape[0]):
        length = int(seq_lens[b])
        pages = block_table[b, : -(-length // page_size)].long()
        k = k_cache[pages].reshape(-1, num_kv_heads, head_dim)[:length].to(dtype)
        v = v_cache[pages].reshape(-1, num_kv_heads, head_dim)[:length].to(dtype)
        k = k.repeat_interleave(group, dim=1)  # (L, H, D)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,lhd->hl", q[b].to(dtype), k) / math.sqrt(head_dim)
        out[b] = torch.einsum("hl,lhd->hd", torch.softmax(scores, dim=-1), v.abs() if magnitude else v)
    return out


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_size: int):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q, k_cache, v_cache, block_table, seq_lens):
        """q (B, H, D) bf16; k/v_cache (num_pages, page_size, H_kv, D) bf16; block_table (B, max_pages) int32;
        seq_lens (B,) int32. Returns (B, H, D) bf16."""
        return decode_attention(q, k_cache, v_cache, block_table, seq_lens).to(q.dtype)


def oracle(model: Model, q, k_cache, v_cache, block_table, seq_lens) -> torch.Tensor:
    """float64 attention, for the grader's error-size detector."""
    return decode_attention(q, k_cache, v_cache, block_table, seq_lens, dtype=torch.float64)


def get_init_kwargs(shape: dict) -> dict:
    return {k: shape[k] for k in ("num_heads", "num_kv_heads", "head_dim", "page_size")}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    """Lengths average exactly `seq_len` (so bytes are fixed per shape); pages are shuffled across the pool."""
    gen = torch.Generator().manual_seed(seed)
    B, H, Hkv, D, P = (shape[k] for k in ("batch", "num_heads", "num_kv_heads", "head_dim", "page_size"))
    L = shape["seq_len"]
    seq_lens = _lengths(B, L, case, gen)
    block_table, num_pages = _block_table(seq_lens, P, gen)
    q = torch.randn(B, H, D, generator=gen)
    k_cache = torch.randn(num_pages, P, Hkv, D, generator=gen)
    v_cache = torch.randn(num_pages, P, Hkv, D, generator=gen)
    if case == "clustered":
        # keys aligned with the query direction in a few positions: sharply peaked attention
        k_cache = k_cache + 4.0 * (torch.rand(num_pages, P, Hkv, 1, generator=gen) < 0.01)
        q = q.abs()
    bf = torch.bfloat16
    return [(q * scale).to(bf).to(device), (k_cache * scale).to(bf).to(device), v_cache.to(bf).to(device),
            block_table.to(device), seq_lens.to(device)]


def _block_table(seq_lens: torch.Tensor, page_size: int, gen: torch.Generator) -> tuple[torch.Tensor, int]:
    """A pool just big enough for every sequence's pages (plus a little slack), handed out in shuffled order.

    The pool is sized by the tokens held, as a serving engine's is, not by batch × the longest sequence (with
    half of all tokens in one sequence that would be a 9 GB pool for a 270 MB cache). Entries of a row past its
    sequence's last page are padding: valid page numbers that no correct kernel reads."""
    needed = (seq_lens.long() + page_size - 1) // page_size
    num_pages = int(needed.sum()) + 7
    order = torch.randperm(num_pages, generator=gen)
    table = order[torch.randint(0, num_pages, (len(needed), int(needed.max())), generator=gen)]
    start = 0
    for b, n in enumerate(needed.tolist()):
        table[b, :n] = order[start:start + n]
        start += n
    return table.int(), num_pages


def _lengths(batch: int, mean: int, case: str, gen: torch.Generator) -> torch.Tensor:
    """Ragged lengths in [1, 2*mean) summing to batch*mean; 'ragged' puts half the tokens in one sequence."""
    if case == "ragged" and batch > 1:
        long = batch * mean // 2
        rest = torch.full((batch - 1,), (batch * mean - long) // (batch - 1))
        rest[: (batch * mean - long) - int(rest.sum())] += 1
        lengths = torch.cat([torch.tensor([long]), rest])
        return lengths[torch.randperm(batch, generator=gen)].int()
    if case not in ("base", "normal", "ragged", "clustered"):
        raise ValueError(f"unknown case {case!r} (base, ragged, clustered)")
    spread = torch.linspace(-(mean - 1), mean - 1, batch).round().long()
    spread = spread - spread.sum() // batch  # centre exactly (linspace is symmetric; guard rounding)
    lengths = (mean + spread).clamp(min=1)
    lengths[0] += batch * mean - int(lengths.sum())
    return lengths[torch.randperm(batch, generator=gen)].int()


def compare(out, expected, inputs, tolerance) -> list[str]:
    """Per element: |out - expected| <= ATOL_FLOOR + RTOL·|expected| + P_ROUNDING · Σ_j p_j |v_j|."""
    if type(out) is not torch.Tensor or out.shape != expected.shape or out.dtype != expected.dtype:
        return [f"output must be a bfloat16 tensor of shape {tuple(expected.shape)}"]
    weighted = decode_attention(*inputs, magnitude=True)
    err = (out.float() - expected.float()).abs()
    excess = err - (ATOL_FLOOR + RTOL * expected.float().abs() + P_ROUNDING * weighted)
    if not (excess > 0).any():
        return []
    idx = tuple(int(i) for i in torch.unravel_index(excess.argmax(), expected.shape))
    return [f"{int((excess > 0).sum())} elements beyond the bf16-probability error bound; worst at {list(idx)}: "
            f"got {out[idx].item():.6g}, expected {expected[idx].item():.6g}, allowed "
            f"{ATOL_FLOOR:g} + {RTOL:g}·|expected| + 2^-8·Σp|v| = {(err[idx] - excess[idx]).item():.3g}"]
