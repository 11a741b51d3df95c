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
# The fingerprint's constants (splitmix64's finaliser and odd multipliers, as signed 64-bit integers: torch's int64
# arithmetic wraps on overflow on every device).
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9 - (1 << 64), 0x94D049BB133111EB - (1 << 64)
_LANE_A, _LANE_C = 0x9E3779B97F4A7C15 - (1 << 64), 0xD6E8FEB86659FD93 - (1 << 64)
_NODE_A, _NODE_C = 0xC2B2AE3D27D4EB4F - (1 << 64), 0x165667B19E3779F9
_PAD = 0x27D4EB2F165667C5
_FINGERPRINT_CHUNK = 1 << 22   # words (32 MiB) hashed as one subtree: bounds the stage's extra memory
_ON_HOST_BELOW = 1 << 12       # tree levels this small are reduced on the CPU


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
    """A 64-bit commitment to an output's exact bytes under `weight`, the same on every device.

    The bytes of each tensor (in logical order) are read as 64-bit words; each word becomes a 128-bit leaf mixed
    with its position and the weight, and the leaves are reduced pairwise, two lanes mixing into each other at every
    node, to one root folded to 64 bits with the tensors' byte lengths. A candidate commits to it before it learns
    whether its output is kept, and the trusted fresh stage recomputes it over what is kept: a kept output must
    hash to the value committed. A wrapping weighted sum would not bind: it is linear, so once told a call is
    kept a candidate can nudge a few elements of the right answer, within tolerance, until its sum equals what it
    committed for a wrong one (the red-team case lazy_bench_forged_kept in MODE "collide" does so in seconds, by
    lattice reduction). Through the nonlinear mixing no shortcut is known to us: meeting a committed value means
    trying outputs, about 2^64 of them. It is not a standard hash, and docs/integrity.md says so."""
    tensors = [out] if isinstance(out, torch.Tensor) else [
        t for t in (out if isinstance(out, (tuple, list)) else []) if isinstance(t, torch.Tensor)]
    roots, lengths, offset = [], [], 0
    for tensor in tensors:
        words, nbytes = _words(tensor)
        lengths.append(nbytes)
        for start in range(0, words.numel(), _FINGERPRINT_CHUNK):
            chunk = words[start:start + _FINGERPRINT_CHUNK]
            roots.append(_chunk_root(chunk, offset + start, weight))
        offset += words.numel()
    root_a = root_c = _PAD
    if roots:
        a, c = _tree(torch.stack([r[0] for r in roots]), torch.stack([r[1] for r in roots]))
        root_a, root_c = int(a.item()), int(c.item())
    folded = torch.tensor([root_a, root_c, len(tensors), *lengths], dtype=torch.int64)
    total = _mix(folded[0] + _mix(folded[1] * _NODE_A + _PAD))
    for value in folded[2:]:
        total = _mix(total * _NODE_C + value)  # a new tensor each time: _mix works in place
    return int(total.item())


def _chunk_root(words: torch.Tensor, offset: int, weight: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk's (a, c) root: on a GPU by the Triton form of the same tree (fingerprint_kernel: the output read
    once instead of some sixty times) where this process found it equal to the torch form, else by torch."""
    kernel = _tree_kernel(words.device)
    if kernel is not None:
        return kernel.chunk_root(words, offset, weight)
    return _tree(*_leaves(words, offset, weight))


_KERNEL_CHECKED: dict[str, Any] = {}  # device -> the kernel module, or None where it is missing or disagrees


def _tree_kernel(device: torch.device) -> Any:
    if device.type != "cuda":
        return None
    key = str(device)
    if key not in _KERNEL_CHECKED:
        _KERNEL_CHECKED[key] = _checked_kernel(device)
    return _KERNEL_CHECKED[key]


def _checked_kernel(device: torch.device) -> Any:
    """The Triton form, if it imports, shares this module's constants and gives the torch form's roots on this
    device (sizes that pad, stop early and span several blocks and launches), else None."""
    try:
        from . import fingerprint_kernel as kernel

        if kernel.constants() != (_MIX1, _MIX2, _LANE_A, _LANE_C, _NODE_A, _NODE_C, _PAD):
            return None
        gen = torch.Generator().manual_seed(0x5EED)
        for n, offset in ((1, 0), (3, 7), (1025, 1 << 40), (3 * 1024 * 1024 + 5, 11)):
            words = torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen, dtype=torch.int64).to(device)
            got = kernel.chunk_root(words, offset, -12345)
            want = _tree(*_leaves(words, offset, -12345))
            if [int(x) for x in got] != [int(x) for x in want]:
                return None
        return kernel
    except Exception:  # noqa: BLE001 - no Triton, or a Triton that cannot build it here: the torch form serves
        return None


def _words(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The tensor's bytes as int64 words (the last one zero-padded), and how many bytes it holds."""
    raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    nbytes, whole = raw.numel(), raw.numel() // 8 * 8
    try:
        body = raw[:whole].view(torch.int64)
    except RuntimeError:  # a storage offset that is not a multiple of 8 bytes: read a copy
        body = raw[:whole].clone().view(torch.int64)
    if whole == nbytes:
        return body, nbytes
    tail = torch.zeros(8, dtype=torch.uint8, device=raw.device)
    tail[:nbytes - whole] = raw[whole:]
    return torch.cat([body, tail.view(torch.int64)]), nbytes


def _xor_lsr_(x: torch.Tensor, bits: int) -> torch.Tensor:
    """x ^= x >>> bits, in place (a logical shift: torch's >> on int64 copies the sign bit in)."""
    return x.bitwise_xor_((x >> bits).bitwise_and_((1 << (64 - bits)) - 1))


def _mix(x: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser, in place on `x` (always a temporary here): a bijection of 64-bit words in which every
    output bit depends on every input bit."""
    _xor_lsr_(x, 30).mul_(_MIX1)
    _xor_lsr_(x, 27).mul_(_MIX2)
    return _xor_lsr_(x, 31)


def _leaves(words: torch.Tensor, offset: int, weight: int) -> tuple[torch.Tensor, torch.Tensor]:
    position = torch.arange(offset, offset + words.numel(), dtype=torch.int64, device=words.device)
    a = _mix((position * _LANE_A).add_(words).add_(weight))
    c = _mix(position.mul_(_LANE_C).bitwise_xor_(words).add_(a).add_(_PAD))
    return a, c


def _tree(a: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairwise reduction of (a, c) to one pair; an odd level is padded with a constant. The last, small levels
    run on the CPU (exact integers: the same values), where each costs microseconds, not a dozen kernel launches."""
    while a.numel() > 1:
        if a.numel() <= _ON_HOST_BELOW and a.device.type != "cpu":
            a, c = a.cpu(), c.cpu()
        if a.numel() % 2:
            pad = torch.full((1,), _PAD, dtype=torch.int64, device=a.device)
            a, c = torch.cat([a, pad]), torch.cat([c, pad])
        left_a, right_a, left_c, right_c = a[0::2], a[1::2], c[0::2], c[1::2]
        a = _mix((left_a * _NODE_A).add_(right_a).add_(left_c ^ right_c))
        c = _mix((left_c ^ right_a).mul_(_NODE_C).add_(right_c).add_(a))
    return a.reshape(()).cpu(), c.reshape(()).cpu()  # roots of tensors on different devices meet on the CPU


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
