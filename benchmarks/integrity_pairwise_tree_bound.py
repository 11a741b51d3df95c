"""How far a hand-written float32 pairwise tree lands from 1 in 04_kahan_softmax's row-sum check, on the CPU.

    python benchmarks/integrity_pairwise_tree_bound.py [--rows 8] [--seeds 3]

Two tree shapes (halves: j with j + n/2; adjacent pairs: 2j with 2j + 1), IEEE float32 throughout (numpy never
widens), against a float64 sum of the same terms. Rows: the problem's own `absorb` and `base` rows at every
vocabulary of its shapes, then rows built against trees (one maximum and every other term the same value just
under half an ulp of 1.0, swept over 200 values), the construction that makes a tree's joins with the maximum's
block round the most. Prints the worst |sum(y) - 1| per row family next to the problem's bound and the rigorous
worst case of a tree, ceil(log2 n) * 2^-24.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench.problems.loader import load_module  # noqa: E402  (after the path)
from kernelbench.problems.loader import load_problem_spec  # noqa: E402

PROBLEM = REPO / "problems" / "04_kahan_softmax"


def tree_sum(e: np.ndarray, adjacent: bool) -> np.ndarray:
    """Row sums of float32 `e` by a full pairwise tree, every addition rounded to float32."""
    while e.shape[-1] > 1:
        if e.shape[-1] % 2:
            e = np.concatenate([e, np.zeros((e.shape[0], 1), np.float32)], axis=-1)
        half = e.shape[-1] // 2
        e = e[:, 0::2] + e[:, 1::2] if adjacent else e[:, :half] + e[:, half:]
    return e[:, 0]


def worst_row_deviation(e: np.ndarray, normaliser: np.ndarray) -> float:
    """max_r |sum_j (e / S)_j - 1|, the division in float32 like a kernel's, the check's sum in float64."""
    y = (e / normaliser[:, None].astype(np.float32)).astype(np.float64)
    return float(np.abs(y.sum(axis=-1) - 1.0).max())


def problem_rows(reference, vocab: int, rows: int, seed: int, case: str) -> np.ndarray:
    (x,) = reference.get_inputs({"rows": rows, "vocab": vocab}, seed, "cpu", case=case)
    x = x.numpy()
    return np.exp(x - x.max(axis=-1, keepdims=True)).astype(np.float32)


def rows_against_trees(vocab: int, count: int = 200) -> np.ndarray:
    """One maximum (1.0) at the front, every other term 2^-24 * u, u swept over [0.30, 0.999]."""
    tiny = (np.float32(2.0**-24) * np.linspace(0.30, 0.999, count, dtype=np.float32))[:, None]
    e = np.repeat(tiny, vocab, axis=1)
    e[:, 0] = 1.0
    return e


def report(label: str, vocab: int, e: np.ndarray, bound: float) -> None:
    cells = {name: worst_row_deviation(e, tree_sum(e.copy(), adjacent)) for name, adjacent in
             (("halves", False), ("adjacent", True))}
    cells["float64 sum"] = worst_row_deviation(e, e.astype(np.float64).sum(axis=-1))
    worst_case = math.ceil(math.log2(vocab)) * 2.0**-24
    line = ", ".join(f"{name} {value:.2e}" for name, value in cells.items())
    print(f"vocab {vocab:>8} {label:<16} {line}; bound {bound:g}, tree worst case {worst_case:.2e}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=8, help="rows per seed of the problem's own cases")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    reference = load_module(PROBLEM / "reference.py", "kahan_reference")
    bound = float(reference.ROW_SUM_BOUND)
    for vocab in sorted({int(shape["vocab"]) for shape in load_problem_spec(PROBLEM).shapes}):
        for case in ("absorb", "base"):
            e = np.concatenate([problem_rows(reference, vocab, args.rows, seed, case) for seed in range(args.seeds)])
            report(f"{case} rows", vocab, e, bound)
        report("built vs trees", vocab, rows_against_trees(vocab), bound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
