"""Output checks: exact type, structure, shape, dtype, device, strides, non-finite values, tolerance.

Every failure message names the worst element, its index and the tolerance, so a reader can tell a rounding
issue from a wrong kernel at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

import torch

# used when problem.yaml gives no tolerance for a dtype
DEFAULT_TOLERANCE = {
    "float64": (1e-7, 1e-7), "float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2), "float16": (1e-2, 1e-2),
    "float8_e4m3fn": (6e-2, 6e-2), "float8_e5m2": (1.2e-1, 1.2e-1), "complex64": (1e-4, 1e-4),
}


@dataclass
class Comparison:
    ok: bool = True
    messages: list[str] = field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst_index: list[int] | None = None

    def fail(self, message: str) -> Comparison:
        self.ok = False
        self.messages.append(message)
        return self


def tolerance_for(dtype: torch.dtype, tolerances: dict[str, Any]) -> tuple[float, float]:
    """(atol, rtol) for a dtype name; problem.yaml entries win over the defaults; integers compare exactly."""
    name = str(dtype).removeprefix("torch.")
    if name in tolerances:
        tol = tolerances[name]
        return (float(tol["atol"]), float(tol["rtol"])) if isinstance(tol, dict) else (float(tol[0]), float(tol[1]))
    return DEFAULT_TOLERANCE.get(name, (0.0, 0.0))


def row_rtol_for(dtype: torch.dtype, tolerances: dict[str, Any]) -> float:
    """The share of the expected row's rms magnitude added to the allowed error (0 unless problem.yaml sets it)."""
    tol = tolerances.get(str(dtype).removeprefix("torch."))
    return float(tol.get("row_rtol", 0.0) or 0.0) if isinstance(tol, dict) else 0.0


def as_tuple(value: Any) -> tuple | None:
    if isinstance(value, torch.Tensor):
        return (value,)
    if type(value) in (tuple, list):
        return tuple(value)
    return None


def compare_outputs(out: Any, expected: Any, tolerances: dict[str, Any], inputs: list | None = None,
                    index_outputs: Sequence[Any] = ()) -> Comparison:
    """Compare a candidate's output with the expected output (a Tensor or a tuple of Tensors).

    `index_outputs` (rules with .output, .input and .values, with the call's `inputs`): an output that holds indices along
    the last dimension of an input is judged by what it selects (gathered from that input, compared with the
    expected `values` output within its tolerance), since equal elements make several index sets right; without
    the inputs it is compared exactly."""
    result = Comparison()
    exp = as_tuple(expected)
    if exp is None:
        raise TypeError(f"the expected output is a {_type_name(expected)}, not a tensor or a tuple of them")
    single = isinstance(expected, torch.Tensor)
    if single and type(out) is not torch.Tensor:
        return result.fail(f"output is a {_type_name(out)}, not exactly torch.Tensor "
                           "(subclasses, wrappers and lazy tensors are refused)")
    got = as_tuple(out)
    if got is None:
        return result.fail(f"output is a {_type_name(out)}, expected a tuple of {len(exp)} tensors")
    if len(got) != len(exp):
        return result.fail(f"output has {len(got)} elements, expected {len(exp)}")
    by_selection = {rule.output: rule for rule in index_outputs if inputs is not None}
    for i, (o, e) in enumerate(zip(got, exp)):
        name = "output" if single else f"output[{i}]"
        rule = by_selection.get(i)
        if rule is not None and inputs is not None and rule.input < len(inputs) and rule.values < len(exp):
            values = exp[rule.values]
            _compare_selection(name, o, e, inputs[rule.input], values, tolerance_for(values.dtype, tolerances),
                               result)
            continue
        _compare_tensor(name, o, e, tolerance_for(e.dtype, tolerances), result, row_rtol_for(e.dtype, tolerances))
    return result


def _compare_selection(name: str, o: Any, e: torch.Tensor, source: Any, values: torch.Tensor,
                       tol: tuple[float, float], result: Comparison) -> None:
    """Indices judged by the elements they select: in range, and gathering `source` at them gives `values`."""
    problems = _metadata_problems(name, o, e)
    if problems or not isinstance(source, torch.Tensor):
        for p in problems or [f"{name}: the input it indexes is not a tensor"]:
            result.fail(p)
        return
    size = source.shape[-1]
    out_of_range = (o < 0) | (o >= size)
    if bool(out_of_range.any()):
        idx = out_of_range.nonzero()[0]
        result.fail(f"{name}: {int(out_of_range.sum())} of {e.numel()} indices are outside [0, {size}); first at "
                    f"index {_index(idx)}: {o[tuple(idx)].item()}")
        return
    selected = torch.gather(source.to(o.device), -1, o.long())
    checked = Comparison()
    _compare_values(f"{name} (the input's elements at these indices)", selected, values.to(selected.dtype), tol,
                    checked)
    for message in checked.messages:
        result.fail(message)


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _compare_tensor(name: str, o: Any, e: torch.Tensor, tol: tuple[float, float], result: Comparison,
                    row_rtol: float = 0.0) -> None:
    problems = _metadata_problems(name, o, e)
    if problems:
        for p in problems:
            result.fail(p)
        return
    if e.is_floating_point() or e.is_complex():
        _compare_values(name, o, e, tol, result, row_rtol)
    elif not torch.equal(o, e):
        diff = (o != e).nonzero()
        result.fail(f"{name}: {diff.shape[0]} of {e.numel()} elements differ (exact match required for "
                    f"{e.dtype}); first at index {_index(diff[0])}: got {o[tuple(diff[0])].item()}, "
                    f"expected {e[tuple(diff[0])].item()}")


def _metadata_problems(name: str, o: Any, e: torch.Tensor) -> list[str]:
    if type(o) is not torch.Tensor:
        return [f"{name} is a {_type_name(o)}, not exactly torch.Tensor"]
    problems = []
    if o.layout != torch.strided:
        problems.append(f"{name} has layout {o.layout}, expected a dense strided tensor")
    if tuple(o.shape) != tuple(e.shape):
        problems.append(f"{name} has shape {tuple(o.shape)}, expected {tuple(e.shape)}")
    if o.dtype != e.dtype:
        problems.append(f"{name} has dtype {o.dtype}, expected {e.dtype}")
    if o.device.type != e.device.type:
        problems.append(f"{name} is on {o.device}, expected {e.device.type}")
    if not problems and not _strides_ok(o, e):
        problems.append(f"{name} has strides {o.stride()}, expected {e.stride()}"
                        + (" (contiguous)" if e.is_contiguous() else ""))
    return problems


def _strides_ok(o: torch.Tensor, e: torch.Tensor) -> bool:
    if e.is_contiguous():
        return o.is_contiguous()
    return o.stride() == e.stride()


def _index(idx: torch.Tensor) -> list[int]:
    return [int(v) for v in idx.tolist()]


def _compare_values(name: str, o: torch.Tensor, e: torch.Tensor, tol: tuple[float, float],
                    result: Comparison, row_rtol: float = 0.0) -> None:
    atol, rtol = tol
    wide = torch.complex128 if e.is_complex() else torch.float64
    o64, e64 = o.detach().to(wide), e.to(device=o.device, dtype=wide)
    finite_e, finite_o = torch.isfinite(e64), torch.isfinite(o64)
    bad_nonfinite = (finite_e & ~finite_o) | (~finite_e & ~(_same_nonfinite(o64, e64)))
    if bool(bad_nonfinite.any()):
        idx = bad_nonfinite.nonzero()[0]
        result.fail(f"{name}: {int(bad_nonfinite.sum())} of {e.numel()} elements are NaN/Inf where the "
                    f"expected value differs; first at index {_index(idx)}: got {o64[tuple(idx)].item()}, "
                    f"expected {e64[tuple(idx)].item()}")
        return
    both = finite_e & finite_o
    err = torch.where(both, (o64 - e64).abs(), torch.zeros((), dtype=torch.float64, device=o.device))
    allowed = atol + rtol * e64.abs()
    if row_rtol > 0 and e.dim() >= 1 and e.shape[-1] > 0:
        finite_part = torch.where(finite_e, e64, torch.zeros((), dtype=e64.dtype, device=e64.device))
        allowed = allowed + row_rtol * finite_part.abs().square().mean(dim=-1, keepdim=True).sqrt()
    excess = err - allowed
    _record_errors(err, e64, result)
    if e.numel() and float(excess.max()) > 0:
        flat = int(excess.argmax())
        worst = [int(i) for i in torch.unravel_index(torch.tensor(flat), e.shape)] if e.dim() else []
        at = tuple(worst)
        result.worst_index = worst
        result.fail(f"{name}: {int((excess > 0).sum())} of {e.numel()} elements out of tolerance; worst at "
                    f"index {worst}: got {o64[at].item():.6g}, expected {e64[at].item():.6g}, "
                    f"|diff| {err[at].item():.3g} > atol + rtol*|expected|"
                    f"{' + row_rtol*rms(row)' if row_rtol else ''} = {allowed[at].item():.3g} "
                    f"(atol={atol:g}, rtol={rtol:g}{f', row_rtol={row_rtol:g}' if row_rtol else ''})")


def _same_nonfinite(o: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Where the expected value is NaN/Inf, the candidate must hold the same non-finite value."""
    return (torch.isnan(o) & torch.isnan(e)) | (o == e)


def _record_errors(err: torch.Tensor, e64: torch.Tensor, result: Comparison) -> None:
    if err.numel() == 0:
        return
    max_abs = float(err.max())
    rel = err / e64.abs().clamp_min(1e-30)
    result.max_abs_err = max(result.max_abs_err or 0.0, max_abs)
    result.max_rel_err = max(result.max_rel_err or 0.0, float(rel.max()))
    if result.worst_index is None:
        flat = int(err.argmax())
        result.worst_index = [int(i) for i in torch.unravel_index(torch.tensor(flat), err.shape)] if err.dim() \
            else []
