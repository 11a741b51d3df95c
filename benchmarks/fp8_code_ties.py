#!/usr/bin/env python3
"""How many of 09's fp8 codes an honest kernel rounds differently from the reference, on the CPU's small shapes.

An honest kernel computes y / scale in fp32 in its own order: the mean square summed in a tree, 1/sqrt instead of
rsqrt, y * (448 / amax) instead of y / (amax / 448). Each moves a row's values by an ulp or two, and a value at a
rounding tie between two e4m3 codes then lands on the other code. Because the whole row moves together, the
differences come in clusters. This script counts them per case over many seeds, for each way of computing, so the
floor in `reference.MIN_STEP_MISMATCH_CODES` is set above what honest arithmetic gives, with its margin shown.

    python benchmarks/fp8_code_ties.py --seeds 400
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
from pathlib import Path

import torch

PROBLEM = Path(__file__).resolve().parents[1] / "problems" / "09_add_rmsnorm_fp8_quant"
E4M3 = torch.float8_e4m3fn


def load_reference():
    spec = importlib.util.spec_from_file_location("reference_09", PROBLEM / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def honest_q(x, residual, weight, eps: float, *, tree: bool, div_sqrt: bool, reciprocal: bool) -> torch.Tensor:
    """09's q computed in fp32 in one of the orders an honest kernel may use."""
    hf = (x.float() + residual.float()).to(torch.bfloat16).float()
    tokens, hidden = hf.shape
    squares = hf * hf
    mean_sq = (squares.reshape(tokens, -1, 8).sum(-1).sum(-1, keepdim=True) / hidden if tree and hidden % 8 == 0
               else squares.mean(-1, keepdim=True))
    inv_rms = 1.0 / torch.sqrt(mean_sq + eps) if div_sqrt else torch.rsqrt(mean_sq + eps)
    y = hf * inv_rms * weight.float()
    amax = y.abs().amax(-1, keepdim=True).clamp(min=1e-12)
    q = y * (448.0 / amax) if reciprocal else y / (amax / 448.0)
    return q.clamp(-448.0, 448.0).to(E4M3)


def truncated_q(x, residual, weight, eps: float) -> torch.Tensor:
    """The wrong rounding the floor must still catch: every value rounded toward zero instead of to nearest."""
    hf = (x.float() + residual.float()).to(torch.bfloat16).float()
    y = hf * torch.rsqrt((hf * hf).mean(-1, keepdim=True) + eps) * weight.float()
    v = (y / (y.abs().amax(-1, keepdim=True).clamp(min=1e-12) / 448.0)).clamp(-448.0, 448.0)
    nearest = v.to(E4M3)
    bits = nearest.view(torch.uint8).clone()
    rounded_up = (nearest.float().abs() > v.abs()) & (bits & 0x7F != 0)
    bits[rounded_up] -= 1  # the next code toward zero (sign-magnitude: the magnitude bits minus one)
    return bits.view(E4M3)


VARIANTS = {
    "1/sqrt": dict(tree=False, div_sqrt=True, reciprocal=False),
    "tree sum": dict(tree=True, div_sqrt=False, reciprocal=False),
    "y*(448/amax)": dict(tree=False, div_sqrt=False, reciprocal=True),
    "tree sum + y*(448/amax)": dict(tree=True, div_sqrt=False, reciprocal=True),
    "truncation (wrong)": None,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="seeds per (shape, distribution, scale)")
    args = parser.parse_args()
    ref = load_reference()
    shapes = [{"tokens": 8, "hidden": 256}, {"tokens": 5, "hidden": 72}]
    cases = [(d, s) for d in ("base", "outliers", "heavy_tailed") for s in (1.0, 1e-3, 100.0)]
    print(f"09 smoke shapes, {len(cases)} (distribution, scale) cases x {args.seeds} seeds; "
          f"floor {ref.MIN_STEP_MISMATCH_CODES} codes, share {ref.MAX_STEP_MISMATCH:.1%}")
    for shape in shapes:
        codes = shape["tokens"] * shape["hidden"]
        for name, how in VARIANTS.items():
            counts: collections.Counter[int] = collections.Counter()
            for distribution, scale in cases:
                for seed in range(args.seeds):
                    torch.manual_seed(seed)
                    model = ref.Model(**ref.get_init_kwargs(shape))
                    inputs = ref.get_inputs(shape, seed, "cpu", distribution, scale)
                    want = model(*inputs)[0]
                    got = (truncated_q(*inputs, model.weight, model.eps) if how is None
                           else honest_q(*inputs, model.weight, model.eps, **how))
                    counts[int((got.float() != want.float()).sum())] += 1
            spread = (", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) if len(counts) <= 8
                      else f"{len(counts)} different counts")
            print(f"  {shape['tokens']}x{shape['hidden']} ({codes} codes) {name:<24} differing codes -> cases: "
                  f"{spread}; most {max(counts)}, fewest {min(counts)}")


if __name__ == "__main__":
    main()
