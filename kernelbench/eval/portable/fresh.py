"""Fresh inputs for every timed call, and the secret subset of their outputs the judge checks afterwards.

A timed loop that rotates a few fixed input sets lets a candidate keep answers under any key it likes (a pointer,
a few sampled values, a checksum of the whole content) and serve every call after the first round from memory;
the in-place replay probe and the DRAM-byte floor catch the first two keys, not the third. So every timed call
gets inputs no call has seen: a base set with its floating-point tensors permuted, drawn from a seed taken just
before the call. Two permutations per tensor, both generic for the deck's base distributions (independent
draws per vector): the vectors along the leading dimensions are shuffled, and the elements within the last
dimension (one permutation for all vectors, so a vector's norm is kept, and a single-row input is fresh too).
Integer tensors (block tables, lengths, offsets) are kept: they carry the structure the floats index.

Permutations alone keep each vector's multiset of values, and a row-wise answer (top-k, a row's softmax
normaliser) depends on nothing else: a memo keyed by the multiset would serve every timed call. So a tensor drawn
symmetric about zero (between a fifth and four fifths of its values negative: activations, logits, queries, keys,
FP8 codes) also has signs flipped, at the elements (i, j) where a random bit of row i differs from one of column j.
Magnitudes stay where they were (norms, per-row and per-column scales, heavy tails are kept) and every row gets a
value set no call has seen. A one-signed tensor (gates, decay rates, betas, scales, weights around 1) keeps its
signs, which its problem may rely on.

No expected output exists for such a call in the timed process, and none may (it would be the answer). Instead a
few calls of each shape, chosen after they return by uniform reservoir sampling from the operating system's
randomness, keep a copy of their output with the call's seed; a trusted process then rebuilds the same inputs
from the problem's generator and this module's permutations, runs the reference and judges the copies
(`kernelbench.eval.judge.run_fresh_judge`). A candidate cannot tell a kept call from another: the choice is made
once the call has returned.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

_randbelow = secrets.randbelow  # bound before any candidate code can patch the module attribute
SEED_BITS = 62
_SAME_SIZE_INTS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}  # signed: sign bit = sign
SYMMETRIC_NEGATIVE = (0.2, 0.8)  # share of negative values that marks a tensor drawn symmetric about zero
SIGN_SAMPLE = 1 << 16


def draw_seed() -> int:
    return _randbelow(1 << SEED_BITS)


def freshen(inputs: list, seed: int) -> list:
    """The inputs with every floating-point tensor permuted (see the module docstring); deterministic in `seed`
    and the same on every device, so the judge rebuilds exactly what the timed call received."""
    gen = torch.Generator().manual_seed(seed)
    return [_fresh_tensor(x, gen) if _is_float_tensor(x) else x for x in inputs]


def _fresh_tensor(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    flipped = _signs_flipped(x, gen) if _drawn_symmetric(x) else x
    return _permuted(flipped, gen)


def _as_rows_of_bits(x: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as same-size integers, one row per vector: a float's sign is its integer's sign."""
    return x.contiguous().view(_SAME_SIZE_INTS[x.element_size()]).reshape(-1, x.shape[-1])


def _drawn_symmetric(x: torch.Tensor) -> bool:
    """Whether both signs are common (judged on at most SIGN_SAMPLE leading elements: the same on every device)."""
    bits = _as_rows_of_bits(x).reshape(-1)[:SIGN_SAMPLE]
    negative = float((bits < 0).sum()) / bits.numel()
    return SYMMETRIC_NEGATIVE[0] <= negative <= SYMMETRIC_NEGATIVE[1]


def _signs_flipped(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Signs flipped where a row's random bit differs from a column's: exact (the sign bit only), and no row keeps
    its value set unless its bit pattern happens to be all-equal or all-different from the columns'."""
    bits = _as_rows_of_bits(x)
    row_bit = torch.randint(0, 2, (bits.shape[0], 1), generator=gen, dtype=torch.bool).to(x.device)
    col_bit = torch.randint(0, 2, (1, bits.shape[1]), generator=gen, dtype=torch.bool).to(x.device)
    sign = torch.iinfo(bits.dtype).min
    moved = torch.where(row_bit ^ col_bit, bits ^ sign, bits)
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    out.view(_SAME_SIZE_INTS[x.element_size()]).copy_(moved.reshape(x.shape))
    return out


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() > 0 and x.numel() > 1


def _permuted(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Gathered as same-size integers: a permutation moves bytes, and float8 has no gather of its own."""
    last = x.shape[-1]
    rows = x.numel() // last
    inner = torch.randperm(last, generator=gen).to(x.device)
    outer = torch.randperm(rows, generator=gen).to(x.device)
    bits = x.contiguous().view(_SAME_SIZE_INTS[x.element_size()]).reshape(rows, last)
    moved = bits.index_select(0, outer).index_select(1, inner)
    out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    out.view(_SAME_SIZE_INTS[x.element_size()]).copy_(moved.reshape(x.shape))
    return out


@dataclass
class Kept:
    call: int                  # the call's number in the shape's timed sequence (warmup included)
    base: int                  # which base input set it was derived from
    seed: int                  # freshen()'s seed
    output: Any                # a copy of what the call returned, or the reason it could not be kept


@dataclass
class Reservoir:
    """Keeps `size` of the calls offered, each call equally likely (reservoir sampling), decided after the call.

    `copy` turns a call's output into what is kept (the worker's: exact tensors cloned, anything else the reason
    it is refused), so a later replay or the candidate cannot change it."""

    size: int
    copy: Callable[[Any], Any]
    kept: list[Kept] = field(default_factory=list)
    offered: int = 0

    def offer(self, base: int, seed: int, out: Any) -> None:
        self.offered += 1
        if self.size <= 0:
            return
        if len(self.kept) < self.size:
            self.kept.append(Kept(self.offered, base, seed, self.copy(out)))
            return
        slot = _randbelow(self.offered)
        if slot < self.size:
            self.kept[slot] = Kept(self.offered, base, seed, self.copy(out))
