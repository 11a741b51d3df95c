"""Row softmax over long fp32 rows, held to the accuracy of compensated (Kahan) summation.

The reference computes in float64 and rounds once to float32, so it *is* the fp64 oracle. `compare` adds a check
that plain elementwise tolerances cannot make: the probabilities of each row, summed in float64, must add up to 1
within ROW_SUM_BOUND. That sum is independent of how accurately a kernel evaluates exp() (every term is divided by
the kernel's own normaliser), so it measures the normaliser's accumulation error alone. The "absorb" stress case
makes fp32 accumulation without compensation lose the small terms; README.md shows the numbers.
"""

from __future__ import annotations

import math

import torch

# |sum_j y[r, j] - 1| per row, summed in float64. Compensated or fp64 accumulation stays near 2 ulp(1) = 2.4e-7
# (plus the final division's rounding); sequential, strided or chunked fp32 accumulation on the absorb rows
# loses several times more (README.md has the figures).
ROW_SUM_BOUND = 1e-6


class Model(torch.nn.Module):
    """y = softmax(x, dim=-1) for x of shape (rows, vocab), float32 in and out."""

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _softmax_fp64(x).to(torch.float32)


def _softmax_fp64(x: torch.Tensor) -> torch.Tensor:
    x64 = x.double()
    e = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def oracle(model: Model, x: torch.Tensor) -> torch.Tensor:
    """The float64 result (the module itself returns it rounded to float32)."""
    return _softmax_fp64(x)


def get_init_kwargs(shape: dict) -> dict:
    return {"vocab": shape["vocab"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    rows, vocab = shape["rows"], shape["vocab"]
    if case == "absorb":
        x = _absorb_rows(rows, vocab, gen)
    elif case == "peaked":
        x = _peaked_rows(rows, vocab, gen)
    elif case in ("base", "normal"):
        x = torch.randn(rows, vocab, generator=gen) * 3.0
    else:
        raise ValueError(f"unknown case {case!r} (base, absorb, peaked)")
    return [(x * scale).to(device)]


def _absorb_rows(rows: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    """Rows of a few maxima (exp = 1) and many tiny terms each just under half an ulp of 1.0.

    An fp32 accumulator that already holds a maximum rounds each tiny term away; summed among themselves the
    tiny terms are 5e-6 or more of the row's total. The number of maxima cycles through 1, 16 and vocab/128,
    placed at the front of the row (even rows: every sequential or strided accumulator meets one first) or at
    random positions (odd rows). The tiny value varies per row so chunked sums round in different directions.
    """
    x = torch.empty(rows, vocab)
    for r in range(rows):
        n_max = [1, 16, max(1, vocab // 128)][r % 3]
        tiny = 2.0 ** -24 * (0.7 + 0.28 * torch.rand((), generator=gen).item())
        offset = 10.0 * torch.rand((), generator=gen).item() - 5.0
        x[r].fill_(offset + math.log(tiny))
        if r % 2 == 0:
            where = torch.arange(n_max)
        else:
            where = torch.randperm(vocab, generator=gen)[:n_max]
        x[r, where] = offset
    return x


def _peaked_rows(rows: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    """One dominant logit per row over a wide background: outputs span 30 orders of magnitude."""
    x = torch.randn(rows, vocab, generator=gen)
    hot = torch.randint(0, vocab, (rows,), generator=gen)
    x[torch.arange(rows), hot] = 40.0
    return x


# ------------------------------------------------------------------------------------------------ checking

def _tolerance(tolerance, dtype_name: str, default: tuple[float, float]) -> tuple[float, float]:
    """Accepts problem.yaml's mapping (dtype -> {atol, rtol}), one such entry, or an (atol, rtol) pair."""
    tol = tolerance
    if isinstance(tol, dict) and dtype_name in tol:
        tol = tol[dtype_name]
    if hasattr(tol, "atol"):
        return float(tol.atol), float(tol.rtol)
    if isinstance(tol, dict) and "atol" in tol:
        return float(tol["atol"]), float(tol["rtol"])
    if isinstance(tol, (tuple, list)) and len(tol) == 2:
        return float(tol[0]), float(tol[1])
    return default


def compare(out, expected, inputs, tolerance) -> list[str]:
    """Elementwise tolerance against the fp64-rounded reference, then the per-row normalisation bound."""
    if type(out) is not torch.Tensor or out.shape != expected.shape or out.dtype != expected.dtype:
        return [f"output must be a float32 tensor of shape {tuple(expected.shape)}"]
    got, want = out.double(), expected.to(out.device).double()  # on the device: a host copy costs seconds
    if not torch.isfinite(got).all():
        return ["output holds NaN or Inf"]
    atol, rtol = _tolerance(tolerance, "float32", (1e-12, 1e-5))
    excess = (got - want).abs() - (atol + rtol * want.abs())
    problems = []
    if (excess > 0).any():
        idx = divmod(int(excess.argmax()), want.shape[-1])
        problems.append(f"elementwise: worst at {list(idx)}: got {got[idx].item():.9g}, expected "
                        f"{want[idx].item():.9g} (atol {atol:g}, rtol {rtol:g})")
    row_err = (got.sum(dim=-1) - 1.0).abs().cpu()
    worst = int(row_err.argmax())
    if row_err[worst] > ROW_SUM_BOUND:
        problems.append(f"normalisation: row {worst} sums to 1 {'+' if float(got[worst].sum()) > 1 else '-'} "
                        f"{row_err[worst].item():.3g}, bound {ROW_SUM_BOUND:g}: the row sum was accumulated "
                        f"without compensation (see README.md)")
    return problems
