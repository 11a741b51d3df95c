"""Fresh inputs for every timed call, and the secret subset of their outputs the judge checks afterwards.

A timed loop that rotates a few fixed input sets lets a candidate keep answers under any key it likes (a pointer,
a few sampled values, a checksum of the whole content) and serve every call after the first round from memory;
the in-place replay probe and the DRAM-byte floor catch the first two keys, not the third. So every timed call
gets inputs no call has seen: a base set with its floating-point tensors permuted, drawn from a seed taken just
before the call. Two permutations per tensor, both generic for the deck's base distributions (independent
draws per vector): the vectors along the leading dimensions are shuffled, and the elements within the last
dimension (one permutation for all vectors, so a vector's norm and value set are kept, and a single-row input is
fresh too). Integer tensors (block tables, lengths, offsets) are kept: they carry the structure the floats index.

No expected output exists for such a call in the timed process, and none may (it would be the answer). Instead a
few calls of each shape, chosen after they return by uniform reservoir sampling from the operating system's
randomness, keep a copy of their output with the call's seed; a trusted process then rebuilds the same inputs
from the problem's generator and this module's permutations, runs the reference and judges the copies
(`kernelbench.eval.worker.fresh.run_fresh`). A candidate cannot tell a kept call from another: the choice is made
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
_SAME_SIZE_INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# the fingerprint's weight mixer (splitmix64's constants, as signed 64-bit integers: torch wraps on overflow)
_MIX1, _MIX2 = 0x9E3779B97F4A7C15 - (1 << 64), 0xBF58476D1CE4E5B9 - (1 << 64)
_FINGERPRINT_CHUNK = 1 << 24


def draw_seed() -> int:
    return _randbelow(1 << SEED_BITS)


def freshen(inputs: list, seed: int) -> list:
    """The inputs with every floating-point tensor permuted (see the module docstring); deterministic in `seed`
    and the same on every device, so the judge rebuilds exactly what the timed call received."""
    gen = torch.Generator().manual_seed(seed)
    return [_permuted(x, gen) if _is_float_tensor(x) else x for x in inputs]


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


def fingerprint(out: Any, weight: int) -> int:
    """A 64-bit fingerprint of an output's exact bits: the wrapping sum of every element's bits times a
    pseudo-random weight drawn from `weight` and the element's position. It cannot be computed without the whole
    output, and the same bits give the same value on any device (integer arithmetic, order-free)."""
    tensors = [out] if isinstance(out, torch.Tensor) else [
        t for t in (out if isinstance(out, (tuple, list)) else []) if isinstance(t, torch.Tensor)]
    total, offset = 0, 0
    for tensor in tensors:
        bits = tensor.detach().contiguous().view(_SAME_SIZE_INTS[tensor.element_size()]).reshape(-1)
        for start in range(0, bits.numel(), _FINGERPRINT_CHUNK):
            chunk = bits[start:start + _FINGERPRINT_CHUNK].to(torch.int64)
            index = torch.arange(offset + start, offset + start + chunk.numel(), dtype=torch.int64,
                                 device=chunk.device)
            mixed = (index + weight) * _MIX1
            mixed = (mixed ^ (mixed >> 31)) * _MIX2
            total = (total + int((chunk * mixed).sum().item())) % (1 << 64)
        offset += bits.numel()
    return total - (1 << 64) if total >= 1 << 63 else total


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
    pacer: Any = None           # kernelbench.eval.pacing.PacerClient: the grader draws the seeds and the kept calls
    shape: int = 0

    def seed(self) -> int:
        """A fresh call's permutation seed: the grader's nonce when paced (sent only now), else drawn here."""
        return self.pacer.ready(self.shape) if self.pacer is not None else draw_seed()

    def offer(self, base: int, seed: int, out: Any) -> None:
        self.offered += 1
        if self.pacer is not None:  # the call is over: the grader's weight, the output's commitment, its slot
            slot = self.pacer.commit(self.shape, fingerprint(out, self.pacer.done(self.shape)))
            if slot == len(self.kept):
                self.kept.append(Kept(self.offered, base, seed, self.copy(out)))
            elif 0 <= slot < len(self.kept):
                self.kept[slot] = Kept(self.offered, base, seed, self.copy(out))
            return
        if self.size <= 0:
            return
        if len(self.kept) < self.size:
            self.kept.append(Kept(self.offered, base, seed, self.copy(out)))
            return
        slot = _randbelow(self.offered)
        if slot < self.size:
            self.kept[slot] = Kept(self.offered, base, seed, self.copy(out))
