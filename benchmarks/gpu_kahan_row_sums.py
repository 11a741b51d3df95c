"""Row-sum deviations |Σ_j y[r, j] − 1| (summed in float64) of several softmax kernels on 04_kahan_softmax's
absorb rows, on the GPU: what separates compensated accumulation from uncompensated ones there.

    python benchmarks/gpu_kahan_row_sums.py

Kernels: the deck's Triton solution (compensated), a softmax whose normaliser is torch's own `sum` (CUDA's
multi-level tree reduction, no compensation), torch.softmax, and the integrity suite's warp-per-row sum.
Then every library route to a row normaliser that an agent could take (reductions, scans, BLAS, fp64 sums):
its deviation on each shape's absorb rows and the kernel names it launches, which is what the launch audit sees.
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


def pairwise_tree(e: torch.Tensor, adjacent: bool) -> torch.Tensor:
    """A full float32 pairwise tree over the row, written by hand (no library reduction, no compensation):
    halves (j with j + n/2) or adjacent pairs (2j with 2j + 1) until one column is left."""
    while e.shape[-1] > 1:
        if e.shape[-1] % 2:
            e = torch.cat([e, e.new_zeros(e.shape[0], 1)], dim=-1)
        half = e.shape[-1] // 2
        e = e[:, 0::2] + e[:, 1::2] if adjacent else e[:, :half] + e[:, half:]
    return e


# every library route to the row normaliser S = sum_j e[r, j]; the fp64 ones accumulate exactly enough; the
# two hand-written pairwise trees are what the bound cannot tell from compensation
NORMALISERS = {
    "sum": lambda e: e.sum(-1, keepdim=True),
    "mean*n": lambda e: e.mean(-1, keepdim=True) * e.shape[-1],
    "nansum": lambda e: torch.nansum(e, -1, keepdim=True),
    "cumsum[-1]": lambda e: e.cumsum(-1)[:, -1:],
    "matmul ones": lambda e: e @ torch.ones(e.shape[-1], 1, device=e.device),
    "einsum": lambda e: torch.einsum("rn->r", e)[:, None],
    "vector_norm p=1": lambda e: torch.linalg.vector_norm(e, 1, dim=-1, keepdim=True),
    "sum(dtype=fp64)": lambda e: e.sum(-1, keepdim=True, dtype=torch.float64).float(),
    "double().sum()": lambda e: e.double().sum(-1, keepdim=True).float(),
    "pairwise tree, halves": lambda e: pairwise_tree(e, adjacent=False),
    "pairwise tree, adjacent": lambda e: pairwise_tree(e, adjacent=True),
}


def library_normalisers(spec, reference) -> None:
    """Row deviation of each library normaliser on every shape's absorb rows, then the kernels it launches."""
    from torch.profiler import ProfilerActivity, profile

    names: dict[str, set[str]] = {}
    for index, shape in enumerate(spec.shapes):
        (x,) = reference.get_inputs(shape, 7, "cuda", case="absorb")
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        cells = []
        for label, normaliser in NORMALISERS.items():
            y = e / normaliser(e)
            cells.append(f"{label} {float((y.double().sum(-1) - 1).abs().max()):.2e}")
            if index == 0:
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    normaliser(e)
                    torch.cuda.synchronize()
                names[label] = {evt.name for evt in prof.events() if evt.device_type.name == "CUDA"}
        print(f"shape {index} {shape}: library normalisers: " + ", ".join(cells))
    for label, kernels in names.items():
        for name in sorted(kernels):
            print(f"kernel [{label}] {name[:400]}")


def main() -> int:
    from kernelbench.problems.loader import load_problem_spec

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
    library_normalisers(spec, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
