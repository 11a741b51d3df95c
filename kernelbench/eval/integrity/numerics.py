"""Numeric checks that a tolerance cannot make: the Kahan row-sum check with its proof of separation.

A softmax's rows, summed in float64, add up to 1 up to the error of the kernel's own normaliser (every term is
divided by it), so the row sum isolates the accumulation error from exp() accuracy. On adversarial rows (maxima
next to many sub-half-ulp terms) uncompensated fp32 accumulation drops the small terms. The evidence shows the
candidate's deviation beside what plain and compensated fp32 accumulation give on the very same terms, which
are recovered from the fp64 oracle (terms = p / max p), so the bound is shown to separate the two.
"""

from __future__ import annotations

from kernelbench.eval.integrity.catalogue import finding
from kernelbench.results.run import Finding

CHECK = "kahan_row_sum"
GPU_LANES = 1024  # a typical block's worth of strided per-thread accumulators


def row_sum_deviation(out):
    """|sum_j y[r, j] - 1| per row, accumulated in float64."""
    return (out.double().sum(dim=-1) - 1.0).abs()


def lane_sums(terms, lanes: int, compensated: bool):
    """fp32 per-lane running sums over a row (lane k takes elements k, k+lanes, ...), lanes combined in fp64."""
    import torch

    rows, n = terms.shape
    width = -(-n // lanes) * lanes
    padded = torch.zeros(rows, width, dtype=torch.float32)
    padded[:, :n] = terms.float()
    steps = padded.view(rows, width // lanes, lanes)
    total = torch.zeros(rows, lanes, dtype=torch.float32)
    carry = torch.zeros_like(total)
    for s in range(steps.shape[1]):
        if compensated:
            y = steps[:, s] - carry
            t = total + y
            carry = (t - total) - y
            total = t
        else:
            total = total + steps[:, s]
    return total.double().sum(dim=-1) - (carry.double().sum(dim=-1) if compensated else 0.0)


def accumulation_errors(oracle) -> dict[str, object]:
    """Relative row-sum error of sequential, per-lane and compensated fp32 accumulation of the oracle's terms."""
    ora = oracle.double().cpu()
    terms = (ora / ora.amax(dim=-1, keepdim=True)).float()
    exact = terms.double().sum(dim=-1)
    errors = {}
    for label, lanes, comp in (("sequential fp32", 1, False), (f"{GPU_LANES}-lane fp32", GPU_LANES, False),
                               ("Kahan fp32", GPU_LANES, True)):
        errors[label] = ((lane_sums(terms, lanes, comp) - exact) / exact).abs()
    return errors


def kahan_check(out, oracle, bound: float, *, case_id: str = "") -> list[Finding]:
    """Error when a row of the candidate's output misses the normalisation bound; evidence gives the numbers."""
    deviation = row_sum_deviation(out).cpu()  # summed on the output's device: a host copy costs seconds
    worst = int(deviation.argmax())
    if float(deviation[worst]) <= bound:
        return []
    others = accumulation_errors(oracle)
    shown = ", ".join(f"{label} {float(err[worst]):.2g}" for label, err in others.items())
    return [finding(CHECK, 14, "row sums miss the compensated-accumulation bound: the normaliser was "
                    "accumulated without compensation",
                    evidence=f"case {case_id} row {worst}: |sum(y) - 1| = {float(deviation[worst]):.3g} > bound "
                             f"{bound:g}; on the same terms: {shown}")]
