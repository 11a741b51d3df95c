"""Row-sum deviations |Σ_j y[r, j] − 1| (summed in float64) of several softmax kernels on 04_kahan_softmax's
absorb rows, on the GPU: what separates compensated accumulation from uncompensated ones there.

    python benchmarks/gpu_kahan_row_sums.py

Kernels: the deck's Triton solution (compensated), a softmax whose normaliser is torch's own `sum` (CUDA's
multi-level tree reduction, no compensation), torch.softmax, and the integrity suite's warp-per-row sum.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench.problems.loader import load_module as load  # noqa: E402  (after the path)

PROBLEM = REPO / "problems" / "04_kahan_softmax"


def torch_sum_softmax(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def main() -> int:
    from kernelbench.problems.spec import load_problem_spec

    spec = load_problem_spec(PROBLEM)
    reference = load(PROBLEM / "reference.py", "reference")
    kernels = {"triton (Kahan)": load(REPO / "solutions" / "triton" / "04_kahan_softmax.py", "tri"),
               "warp-per-row naive": load(REPO / "tests" / "integrity" / "cases" / "14_naive_accumulation.py", "nv")}
    print(f"bound {reference.ROW_SUM_BOUND:g}")
    for index, shape in enumerate(spec.shapes):
        (x,) = reference.get_inputs(shape, 7, "cuda", case="absorb")
        results = {"torch sum (tree)": torch_sum_softmax(x), "torch.softmax": torch.softmax(x, dim=-1)}
        for name, module in kernels.items():
            results[name] = module.Model(**reference.get_init_kwargs(shape)).cuda()(x)
        line = ", ".join(f"{name} {float((y.double().sum(-1) - 1).abs().max()):.2e}" for name, y in results.items())
        print(f"shape {index} {shape}: max row deviation: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
