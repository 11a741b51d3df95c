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
    repeated = _repeated_index(o)
    if repeated is not None:
        at, index = repeated
        result.fail(f"{name}: row {at} holds index {index} more than once: the selected elements must be distinct "
                    "(a tie may pick any of the equal elements, but each element once)")
        return
    selected = torch.gather(source.to(o.device), -1, o.long())
    checked = Comparison()
    _compare_values(f"{name} (the input's elements at these indices)", selected, values.to(selected.dtype), tol,
                    checked)
    for message in checked.messages:
        result.fail(message)


def _repeated_index(indices: torch.Tensor) -> tuple[list[int], int] | None:
    """The first row (its index over the leading dimensions) that names one element twice, and that element."""
    if indices.dim() == 0 or indices.shape[-1] < 2:
        return None
    ordered = indices.sort(dim=-1).values
    same = ordered[..., 1:] == ordered[..., :-1]
    if not bool(same.any()):
        return None
    where = same.nonzero()[0]
    return _index(where[:-1]), int(ordered[tuple(where)])


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


# Elements compared at a time: the float64 working copies of a chunk take 8 MiB each, reused from the heap (larger
# blocks are mapped and page-faulted in afresh each time), where working copies of the whole output took 13 GB
# for a 235M-element one (benchmarks/compare_cost.py).
_CHUNK_ELEMENTS = 1 << 20


def _compare_values(name: str, o: torch.Tensor, e: torch.Tensor, tol: tuple[float, float],
                    result: Comparison, row_rtol: float = 0.0) -> None:
    """Every element within atol + rtol*|expected| (+ row_rtol times its row's rms), in chunks of whole rows.
    Non-finite values must match first; past that, only elements whose expected value is finite are held to the
    tolerance, and every one of them is (a NaN expected somewhere excuses nothing else)."""
    rows_o, rows_e = _as_rows(o.detach()), _as_rows(e.to(device=o.device))
    width = max(1, rows_e.shape[1])
    step = max(1, _CHUNK_ELEMENTS // width)
    wide = torch.complex128 if e.is_complex() else torch.float64
    bad, over, largest = _Tally(), _Tally(), _Largest()
    atol, rtol = tol
    for start in range(0, rows_e.shape[0], step):  # one pass: each chunk widened once
        offset = start * width
        o_rows, e_rows = rows_o[start:start + step], rows_e[start:start + step]
        o64, e64 = o_rows.to(wide), e_rows.to(wide)
        err = o64 - e64  # finite exactly where both values are
        finite = bool(torch.isfinite(err).all())
        if not finite:
            finite_e, finite_o = torch.isfinite(e64), torch.isfinite(o64)
            bad.add_mask((finite_e & ~finite_o) | (~finite_e & ~(_same_nonfinite(o64, e64))), offset, o64, e64)
        if bad.count:  # the verdict is the non-finite mismatch: only its count is still wanted
            continue
        # from here, where the expected value is not finite the candidate's is the same non-finite one
        err, size = (err.abs(), e64.abs()) if e.is_complex() else (err.abs_(), e64.abs_())
        allowed = size * rtol + atol
        if row_rtol > 0 and e.dim() >= 1 and e.shape[-1] > 0:  # the row's rms over its finite expected values
            finite_size = size if finite else torch.where(finite_e, size, 0.0)
            allowed += row_rtol * finite_size.square().mean(dim=-1, keepdim=True).sqrt()
        excess = err - allowed
        rel = err / size.clamp_min(1e-30)
        if not finite:  # the elements whose expected value is not finite are held to nothing more
            held = torch.zeros((), dtype=torch.float64, device=o.device)
            err, rel = torch.where(finite_e, err, held), torch.where(finite_e, rel, held)
            excess = torch.where(finite_e, excess, torch.full((), -torch.inf, dtype=torch.float64, device=o.device))
        largest.add(err, rel, offset)
        over.add_excess(excess, offset, o_rows, e_rows, err, allowed)
    if bad.count:
        at = _unravel(bad.flat, e.shape)
        result.fail(f"{name}: {bad.count} of {e.numel()} elements are NaN/Inf where the expected value differs; "
                    f"first at index {at}: got {bad.got}, expected {bad.expected}")
        return
    if largest.flat is not None:
        result.max_abs_err = max(result.max_abs_err or 0.0, largest.abs_err)
        result.max_rel_err = max(result.max_rel_err or 0.0, largest.rel_err)
        if result.worst_index is None:
            result.worst_index = _unravel(largest.flat, e.shape)
    if over.count:
        worst = _unravel(over.flat, e.shape)
        result.worst_index = worst
        result.fail(f"{name}: {over.count} of {e.numel()} elements out of tolerance; worst at "
                    f"index {worst}: got {over.got:.6g}, expected {over.expected:.6g}, "
                    f"|diff| {over.err:.3g} > atol + rtol*|expected|"
                    f"{' + row_rtol*rms(row)' if row_rtol else ''} = {over.allowed:.3g} "
                    f"(atol={atol:g}, rtol={rtol:g}{f', row_rtol={row_rtol:g}' if row_rtol else ''})")


def _as_rows(x: torch.Tensor) -> torch.Tensor:
    """The tensor as (rows, last dimension), rows in index order (a scalar is one row of one)."""
    return x.reshape(1, 1) if x.dim() == 0 else x.reshape(-1, x.shape[-1]) if x.shape[-1] else x.reshape(0, 0)


def _unravel(flat: int, shape: torch.Size) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)] if len(shape) else []


class _Tally:
    """Elements of a condition over the chunks: how many, and the first in index order with its values."""

    def __init__(self) -> None:
        self.count, self.flat = 0, -1
        self.got: Any = None
        self.expected: Any = None
        self.err = self.allowed = self.best = 0.0

    def add_mask(self, mask: torch.Tensor, offset: int, o64: torch.Tensor, e64: torch.Tensor) -> None:
        found = int(mask.sum())
        if found and not self.count:
            local = int(mask.reshape(-1).nonzero()[0])
            self.flat = offset + local
            self.got, self.expected = _widened_item(o64, local), _widened_item(e64, local)
        self.count += found

    def add_excess(self, excess: torch.Tensor, offset: int, o64: torch.Tensor, e64: torch.Tensor,
                   err: torch.Tensor, allowed: torch.Tensor) -> None:
        """The elements past their tolerance, and the worst of them (the first where several are as bad)."""
        found = int((excess > 0).sum())
        if not found:
            return
        local = int(excess.reshape(-1).argmax())
        worst = float(excess.reshape(-1)[local])
        if not self.count or worst > self.best:
            self.best, self.flat = worst, offset + local
            self.got, self.expected = _widened_item(o64, local), _widened_item(e64, local)
            self.err = err.reshape(-1)[local].item()
            self.allowed = allowed.expand_as(err).reshape(-1)[local].item()
        self.count += found


def _widened_item(x: torch.Tensor, flat: int) -> Any:
    """One element as the comparison saw it: widened to float64 (complex128), then a Python number."""
    return x.reshape(-1)[flat].to(torch.complex128 if x.is_complex() else torch.float64).item()


class _Largest:
    """The largest absolute and relative errors over the chunks, and where the absolute one first occurs."""

    def __init__(self) -> None:
        self.abs_err = self.rel_err = 0.0
        self.flat: int | None = None

    def add(self, err: torch.Tensor, rel: torch.Tensor, offset: int) -> None:
        if err.numel() == 0:
            return
        local = int(err.reshape(-1).argmax())
        value = float(err.reshape(-1)[local])
        if self.flat is None or value > self.abs_err:
            self.abs_err, self.flat = value, offset + local
        self.rel_err = max(self.rel_err, float(rel.max()))


def _same_nonfinite(o: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Where the expected value is NaN/Inf, the candidate must hold the same non-finite value."""
    return (torch.isnan(o) & torch.isnan(e)) | (o == e)
