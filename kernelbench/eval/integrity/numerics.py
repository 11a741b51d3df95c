"""Numeric checks that a tolerance cannot make: the Kahan row-sum check with its proof of separation.

A softmax's rows, summed in float64, add up to 1 up to the error of the kernel's own normaliser (every term is
divided by it), so the row sum isolates the accumulation error from exp() accuracy. On adversarial rows (maxima
next to many sub-half-ulp terms) uncompensated fp32 accumulation drops the small terms. The evidence shows the
candidate's deviation beside what plain and compensated fp32 accumulation give on the very same terms, which
are recovered from the fp64 oracle (terms = p / max p), so the bound is shown to separate the two.

The bound cannot see everything: a multi-level tree whose per-thread chains are short (torch's own CUDA sum spreads
a long row over many blocks) loses little even on absorb rows — measured on the H100, torch's fp32 sum stays under
the bound on three of 04's four shapes (benchmarks/gpu_kahan_row_sums.py). Those library routes are recognised by
name instead: the launch audit (launches.py) refuses the kernels of torch's fp32 reductions, scans and BLAS, whose
accumulation is uncompensated by construction, while their float64 versions stay allowed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding

if TYPE_CHECKING:
    import torch

CHECK = "kahan_row_sum"
LIBRARY_CHECK = "kahan_library_sum"
KAHAN_CHECKS = {"kahan_row_sum", "kahan"}  # leak_checks names that switch both Kahan checks on

# Demangled names as CUDA's profiler reports them (H100, torch 2.11), e.g.
#   at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ...sum_functor<float, float, float>...
#   at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> >
#   internal::gemvx::kernel<int, int, float, float, float, float, ...>, cublasLt::splitKreduce_kernel<...>
# A reduction op's template arguments carry its accumulation type: float (or a half type) means no compensation.
_REDUCTION_OP = re.compile(r"\b(sum_functor|nansum_functor|MeanOps|NanSumOps|NormOneOps|NormTwoOps|NormOps|"
                           r"WelfordOps)<([^<>]*)>")
_SCAN = re.compile(r"scan", re.IGNORECASE)
_SCAN_SUM = re.compile(r"std::plus|Sum\b|sum_functor|add", re.IGNORECASE)
_BLAS = re.compile(r"gemv|gemm|splitKreduce|cublas|cutlass|xmma|dot_kernel|asum", re.IGNORECASE)
_FLOAT = re.compile(r"\b(float|c10::Half|c10::BFloat16|__half|__nv_bfloat16)\b")
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


def accumulation_errors(oracle) -> dict[str, torch.Tensor]:
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


def uncompensated_library_sum(name: str) -> str | None:
    """Why a launched kernel is a library sum accumulating below float64, or None (fp64 sums, max, elementwise)."""
    if "double" in name:
        return None
    for op, args in _REDUCTION_OP.findall(name):
        if accumulator := _FLOAT.search(args):
            return f"torch reduction {op} accumulating in {accumulator.group(1)}"
    if _SCAN.search(name) and _SCAN_SUM.search(name) and _FLOAT.search(name):
        return "torch prefix-sum scan in float32"
    if _BLAS.search(name) and _FLOAT.search(name):
        return "BLAS kernel (matrix-vector or matrix product) accumulating in float32"
    return None
