"""`problems/<NN>_<name>/problem.yaml`: the pydantic model of one problem and its formula evaluation."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SPEC_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------------------------------------- formulas

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_FUNCS: dict[str, Callable[..., float]] = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor,
                                           "log2": math.log2, "sqrt": math.sqrt}


def _formula_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Call, ast.Load,
                                   ast.USub, ast.UAdd, *_BINOPS)):
            raise ValueError(f"'{type(node).__name__}' is not allowed in a formula (use + - * / // ** % "
                             f"and {', '.join(sorted(_FUNCS))})")
    return names - set(_FUNCS)


def _evaluate(node: ast.AST, env: dict[str, float]) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_evaluate(node.left, env), _evaluate(node.right, env))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        return _FUNCS[node.func.id](*(_evaluate(a, env) for a in node.args))
    raise ValueError(f"cannot evaluate {ast.dump(node)}")


def parse_formula(text: str) -> tuple[ast.Expression, set[str]]:
    """Parse an arithmetic formula over shape keys; returns its tree and the names it uses."""
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"formula {text!r} is not valid arithmetic: {exc.msg}") from None
    return tree, _formula_names(tree)


def evaluate_formula(text: str, shape: dict[str, Any]) -> float:
    tree, _ = parse_formula(text)
    return float(_evaluate(tree, {k: v for k, v in shape.items() if isinstance(v, (int, float))}))


# ------------------------------------------------------------------------------------------------- parts

class Tolerance(Strict):
    atol: float
    rtol: float
    # allowed |diff| also grows by row_rtol × the rms of the expected output's row (last dimension): where a
    # reduction cancels, the error of a correct kernel scales with the terms summed, not with the tiny result
    row_rtol: float = Field(0.0, ge=0)


class TimingSpec(Strict):
    warmup: int = Field(10, ge=0)
    trials: int = Field(30, ge=1)
    max_trials: int = Field(200, ge=1)
    # stop early once the standard error of the mean falls under this share of the mean (0 disables)
    stderr_target: float = Field(0.0, ge=0)
    # replay a CUDA graph of the call for kernels faster than this (0: never). Off by default: the launch cover
    # keeps the host's launch work out of the device interval as a replay does, and capturing a candidate's call
    # changes what it does (a candidate's own graphs broken by the failed capture, a capture-safe slower path)
    cuda_graph_below_ms: float = Field(0.0, ge=0)
    input_sets: int = Field(4, ge=1)  # rotating pre-generated input sets, a fresh one for every timed call
    # wall-clock cap on one shape's warmup + timed calls: a solution taking a second per call still gets at least
    # 5 timed trials (its spread is then small against its median) without holding the GPU for minutes
    shape_seconds: float = Field(20.0, gt=0)
    # after the scored loop, eager calls under each other input protocol (new tensors; the same tensors), shown
    # beside the score so that a call whose speed depends on its inputs' identity is seen (0 disables)
    compare_trials: int = Field(20, ge=0)


class StressCase(Strict):
    name: str
    scale: float = 1.0          # multiplies the generator's inputs
    distribution: str = "normal"  # normal | heavy_tailed | clustered | skewed | ... (problem-specific)
    # the case's label in checks and failure messages ("" -> stress:<name>)
    label: str = ""
    # this case's tolerance by dtype, over the problem's (another benchmark's stress case sets its own)
    tolerance: dict[str, Tolerance] = Field(default_factory=dict)
    # indices of the graded shapes it is drawn on (None: the smallest shape); an index past them is not drawn
    shapes: list[int] | None = None

    @property
    def case_label(self) -> str:
        return self.label or f"stress:{self.name}"

    @property
    def as_declared_only(self) -> bool:
        """An entry with a tolerance or shapes of its own is drawn only where and as it is declared (never by the
        property draws, which mix every distribution with every scale and shape under the problem's tolerance)."""
        return bool(self.tolerance) or self.shapes is not None


class SotaEntry(Strict):
    name: str
    module: str = "sota.py"
    source: str = ""            # library and version, or a link to where it comes from
    requires: list[str] = []    # python packages it needs; missing ones mean "not available on this GPU"


NATIVE_ID = re.compile(r"^\d{2}_[a-z0-9_]+$")
# another benchmark's problem keeps its own name (Stanford KernelBench: 23_Softmax, 1_Square_matrix_multiplication_)
PROBLEM_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class IndexOutput(Strict):
    """An output holding indices along the last dimension of an input (top-k's indices): judged by the elements it
    selects, gathered from that input and compared with the expected `values` output, since equal elements make
    several index sets right. For another deck whose own check judges them that way."""
    output: int = Field(ge=0)
    input: int = Field(ge=0)
    values: int = Field(ge=0)


class ProblemSpec(Strict):
    """One problem of a deck. Unknown keys are errors, so a typo never silently changes grading.

    Our own folders (problem.yaml) always give the roofline (regime, ceiling, flops and bytes formulas); a problem
    loaded from another benchmark's layout (kernelbench.problems.layouts) may lack it, and is then timed without a
    peak_fraction."""

    version: int = SPEC_VERSION
    id: str = Field(pattern=PROBLEM_ID)
    title: str
    description: str
    regime: Literal["compute", "memory"] | None
    ceiling: str | None         # dtype key of the governing ceiling (e.g. fp8, bf16) or "dram" for memory
    shapes: list[dict[str, Any]] = Field(min_length=1)
    smoke_shapes: list[dict[str, Any]] = Field(default_factory=list)  # tiny shapes for CPU runs
    flops: str | None
    bytes: str | None
    tolerance: dict[str, Tolerance] = Field(default_factory=dict)  # keyed by the dtype of the compared tensor
    forbidden: list[str] = Field(default_factory=list)          # python-level ops/modules the solution must not use
    forbidden_kernels: list[str] = Field(default_factory=list)  # substrings of launched kernel names
    seeds: list[int] = Field(default_factory=lambda: [42, 123, 456])
    timing: TimingSpec = Field(default_factory=TimingSpec)
    stress: list[StressCase] = Field(default_factory=list)
    sota: list[SotaEntry] = Field(default_factory=list)
    leak_checks: list[str] = Field(default_factory=list)  # named algorithm checks (fp8_tensor_cores, kahan, ...)
    # arch (sm_90, sm_100, sm_120) -> regexes over SASS mnemonics; a kernel launched in the timed region must
    # contain at least one match, or the work did not run on the units the problem names (e.g. FP8 tensor cores)
    required_sass: dict[str, list[str]] = Field(default_factory=dict)
    interface: dict[str, Any] = Field(default_factory=dict)  # module class name, init/forward argument names
    index_outputs: list[IndexOutput] = Field(default_factory=list)  # compared by what they select
    # every output bit-for-bit the same when a call is repeated on identical inputs (eval/cases.py repeat cases); a
    # problem sets it only where its prompt asks for determinism, since float atomics reorder sums run to run
    deterministic: bool = False

    @field_validator("flops", "bytes")
    @classmethod
    def _formula_parses(cls, value: str | None) -> str | None:
        if value is not None:
            parse_formula(value)
        return value

    @model_validator(mode="after")
    def _formulas_use_shape_keys(self) -> "ProblemSpec":
        for field in ("flops", "bytes"):
            if getattr(self, field) is None:
                continue
            _, names = parse_formula(getattr(self, field))
            for i, shape in enumerate(self.shapes + self.smoke_shapes):
                missing = names - set(shape)
                if missing:
                    raise ValueError(f"{field} formula uses {sorted(missing)}, which shape {i} does not define")
        return self

    @model_validator(mode="after")
    def _roofline_complete(self) -> "ProblemSpec":
        given = [self.regime is not None, self.ceiling is not None]
        if any(given) and not all(given):
            raise ValueError("regime and ceiling go together: give both (a roofline) or neither")
        return self

    @property
    def has_roofline(self) -> bool:
        """Whether a timed shape becomes a fraction of a hardware ceiling (a regime, a ceiling and both formulas)."""
        return None not in (self.regime, self.ceiling, self.flops, self.bytes)

    def flops_of(self, shape: dict[str, Any]) -> float | None:
        return evaluate_formula(self.flops, shape) if self.flops is not None else None

    def bytes_of(self, shape: dict[str, Any]) -> float | None:
        return evaluate_formula(self.bytes, shape) if self.bytes is not None else None


def load_native_spec(problem_dir: Path) -> ProblemSpec:
    """Load and validate our own `problem.yaml` from a problem folder; errors name the file and line."""
    from kernelbench.errors import KernelBenchError
    from kernelbench.fileio import FIELDS_DOC, line_of, load_yaml, parse_model

    problem_dir = Path(problem_dir)
    path = problem_dir / "problem.yaml"
    if not path.is_file():
        raise KernelBenchError("no problem.yaml here", path=problem_dir,
                               hint="point at a problem folder such as problems/01_fp8_gemm")
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise KernelBenchError("expected a mapping of keys to values at the top level", path=path, line=1,
                               hint=f"see {FIELDS_DOC} for what this file holds")
    spec = parse_model(path, ProblemSpec, data)
    id_line = line_of(data, ["id"])
    if not NATIVE_ID.match(spec.id):
        raise KernelBenchError(f"id '{spec.id}' is not NN_lowercase_name", path=path, line=id_line,
                               hint="name our own problems like 01_fp8_gemm (two digits, then lowercase)")
    if spec.id != problem_dir.name:
        raise KernelBenchError(f"id '{spec.id}' does not match the folder name '{problem_dir.name}'",
                               path=path, line=id_line, hint="make the id and the folder name the same")
    missing = [k for k in ("regime", "ceiling", "flops", "bytes") if getattr(spec, k) is None]
    if missing:
        raise KernelBenchError(f"{', '.join(missing)} must be given", path=path,
                               line=line_of(data, [missing[0]]),
                               hint="our problems state their roofline: regime, ceiling, flops and bytes")
    return spec
