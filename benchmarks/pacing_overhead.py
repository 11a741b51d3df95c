"""What a paced call costs beside the call itself: the fresh permutation of its inputs and the fingerprint of its
output (kernelbench/eval/portable/fresh.py), at the sizes the deck's and the published board's shapes produce.

The grader's clock cannot see a timing lie smaller than this overhead (docs/integrity.md, "The grader's clock"), so
its size on large outputs is what the clock's reach depends on. The fingerprint is timed beside a wrapping weighted
sum of the same bits (the linear construction it replaced, written here only to compare costs).

    python benchmarks/pacing_overhead.py [--device cuda] [--mib 32 256 1024] [--repeat 3]

Prints one line per (dtype, size): milliseconds for freshen (one tensor of that size), the fingerprint and the
weighted sum, median of --repeat runs after one warm-up; on a GPU, also the fingerprint with its tree in torch
operations (the form its Triton kernels replace there), whether the Triton form is in use (fresh.py takes it where
it builds and agrees with the torch form), and whether the fingerprint of the tensor there equals the CPU's of its
copy and the torch form's (the fresh stage may recompute it on another device than the bench stage's).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from kernelbench.eval.portable import fresh
from kernelbench.eval.portable.fresh import fingerprint, freshen

_MIX1, _MIX2 = 0x9E3779B97F4A7C15 - (1 << 64), 0xBF58476D1CE4E5B9 - (1 << 64)
_INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def weighted_sum(out: torch.Tensor, weight: int) -> int:
    """The linear construction, for its cost: every element's bits times a mixed weight of its position, summed."""
    bits = out.contiguous().view(_INTS[out.element_size()]).reshape(-1)
    total = 0
    for start in range(0, bits.numel(), 1 << 24):
        chunk = bits[start:start + (1 << 24)].to(torch.int64)
        index = torch.arange(start, start + chunk.numel(), dtype=torch.int64, device=chunk.device)
        mixed = (index + weight) * _MIX1
        mixed = (mixed ^ (mixed >> 31)) * _MIX2
        total = (total + int((chunk * mixed).sum().item())) % (1 << 64)
    return total


def torch_form(out: torch.Tensor, weight: int) -> int:
    """The fingerprint with its tree in torch operations, whatever the GPU (the form the Triton one replaces)."""
    saved = dict(fresh._KERNEL_CHECKED)
    fresh._KERNEL_CHECKED[str(out.device)] = None
    try:
        return fingerprint(out, weight)
    finally:
        fresh._KERNEL_CHECKED.clear()
        fresh._KERNEL_CHECKED.update(saved)


def timed_ms(fn, device: str, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mib", type=int, nargs="+", default=[32])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    name = torch.cuda.get_device_name() if args.device == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"device: {name}; torch {torch.__version__}")
    for dtype in (torch.bfloat16, torch.float32):
        for mib in args.mib:
            rows = mib * (1 << 20) // (4096 * torch.tensor([], dtype=dtype).element_size())
            x = torch.randn(rows, 4096, device=args.device).to(dtype)
            figures = {
                "freshen": timed_ms(lambda: freshen([x], 12345), args.device, args.repeat),
                "fingerprint": timed_ms(lambda: fingerprint(x, 12345), args.device, args.repeat),
                "weighted sum": timed_ms(lambda: weighted_sum(x, 12345), args.device, args.repeat),
            }
            agree = ""
            if args.device == "cuda":
                kernel = fresh._tree_kernel(x.device)  # the Triton form, where this GPU built it and it agreed
                figures["fingerprint, torch form"] = timed_ms(lambda: torch_form(x, 12345), args.device, args.repeat)
                agree = (f"; Triton form in use: {kernel is not None}; the same fingerprint on the CPU: "
                         f"{fingerprint(x, 12345) == fingerprint(x.cpu(), 12345) == torch_form(x, 12345)}")
            print(f"{str(dtype).removeprefix('torch.'):>8} {mib:>5} MiB: "
                  + ", ".join(f"{k} {v:.2f} ms" for k, v in figures.items()) + agree)
            del x
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
