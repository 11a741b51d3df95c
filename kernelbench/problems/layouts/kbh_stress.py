"""KernelBench-Hard's stress cases as our stress entries, run through their own harness.

Their problems' check.py (kernelbench.com `benchmarks/hard/problems-*/<problem>/check.py`) judges every shape and
seed again under the numeric-stress cases of `src/eval/numeric_stress.py` (named input scalings, each with a
tolerance of its own: `tolerance_for_case`), and one shape (`property_shape_index`) under the property cases of
`src/eval/property_stress.py` (structural rewrites of the inputs: their canonical case and a few hypothesis draws
from a seed, judged within `tolerance_for_property`). Where that package sits beside the deck (two folders above
the problem, as their check.py finds it) this module imports it and:

- declares each case as a `StressCase` (`numeric:<name>` or `property:<their case's repr>` as the distribution, the
  tolerance their harness gives that case for every float dtype, the property shape as the entry's shape);
- draws the property cases of one grading with their `generate_property_cases` from a seed derived from the
  grading's secret seed (`drawn_entries`);
- applies a case to the inputs our seeded draw made (`StressInputs.apply`, called by the shim's get_inputs):
  their `numeric_stress_context` for a numeric case, their `apply_property_case` for a property case.

Their package is imported under its own name (`src`), which is generic, so it is imported with the harness
folder on sys.path and then taken out of sys.modules again: two decks' harnesses (or a project's own `src`) never
shadow each other in one process. Nothing here is imported until a stress case is asked for, so a deck without
the harness loads as before.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import sys
import threading
from dataclasses import dataclass, is_dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.problems.spec import StressCase, Tolerance

PACKAGE = "src"
HARNESS_COPY = "_harness"          # where a grader's copy of the problem holds their package (pristine_copy)
NUMERIC, PROPERTY = "numeric:", "property:"
MODULES = ("correctness", "numeric_stress", "property_stress")
# the float dtypes a case's tolerance is stated for (their tolerance_for_dtype, one per dtype)
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")

_lock = threading.Lock()
_loaded: dict[Path, Harness] = {}


@dataclass(frozen=True)
class Harness:
    """Their modules: correctness (tolerance_for_dtype), numeric_stress and property_stress (None where absent)."""

    root: Path
    correctness: ModuleType
    numeric: ModuleType | None
    property: ModuleType | None


@dataclass(frozen=True)
class Entries:
    """What their harness declares for one problem: the entries we draw, and the cases we cannot (with why)."""

    stress: list[StressCase]
    lost: list[str]


def harness_root(problem: Path) -> Path | None:
    """The folder holding their `src` package for this problem: inside a grader's copy of the problem
    (`_harness/`), else two folders above the problem, where their check.py imports it from."""
    for root in (Path(problem) / HARNESS_COPY, Path(problem).parent.parent):
        if (root / PACKAGE / "eval" / "correctness.py").is_file() and any(
                (root / PACKAGE / "eval" / f"{name}.py").is_file() for name in MODULES[1:]):
            return root
    return None


def harness_files(root: Path) -> list[Path]:
    """The files an import of their stress modules executes: the package's __init__ and every module of src/eval
    (their src/eval/__init__.py imports several of them)."""
    package = Path(root) / PACKAGE
    top = [package / "__init__.py"] if (package / "__init__.py").is_file() else []
    return top + sorted((package / "eval").glob("*.py"))


def load_harness(root: Path) -> Harness:
    """Their modules, imported once per process and harness folder."""
    root = Path(root).resolve()
    with _lock:
        if root not in _loaded:
            _loaded[root] = _import_isolated(root)
        return _loaded[root]


def _import_isolated(root: Path) -> Harness:
    ours = {k: sys.modules.pop(k) for k in list(sys.modules) if k == PACKAGE or k.startswith(PACKAGE + ".")}
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        found = {name: importlib.import_module(f"{PACKAGE}.eval.{name}") for name in MODULES
                 if (root / PACKAGE / "eval" / f"{name}.py").is_file()}
    except Exception as exc:
        raise KernelBenchError(f"their harness could not be imported: {type(exc).__name__}: {exc}",
                               path=root / PACKAGE / "eval",
                               hint="it needs torch and hypothesis (pip install -e '.[eval]')") from None
    finally:
        sys.path.remove(str(root))
        for name in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        sys.modules.update(ours)
    return Harness(root, found["correctness"], found.get("numeric_stress"), found.get("property_stress"))


# ------------------------------------------------------------------------------------------------- declaring

def case_tolerance(harness: Harness, base: dict | None, override: dict | None) -> dict[str, Tolerance]:
    """The tolerance their checker judges a case with (their tolerance_for_dtype over the case's override dict),
    for each float dtype where it differs from the problem's own (`base`)."""
    import torch

    lookup = harness.correctness.tolerance_for_dtype
    found = {}
    for name in FLOAT_DTYPES:
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        theirs, plain = lookup(dtype, override), lookup(dtype, base)
        if theirs != plain:
            found[name] = Tolerance(atol=float(theirs["atol"]), rtol=float(theirs["rtol"]))
    return found


def declared_entries(harness: Harness, problem: str, base: dict | None) -> Entries:
    """Their numeric cases (those that scale inputs only) and their canonical property case, as stress entries."""
    stress, lost = [], []
    if harness.numeric is not None:
        for case in harness.numeric.numeric_stress_cases(problem):
            if not case.input_scales and not case.state_scales:
                continue  # their nominal case: our base cases
            if case.state_scales:
                lost.append(f"numeric case {case.name} (scales the model's {', '.join(case.state_scales)}: this "
                            "grader builds each shape's models once, from a secret-mixed seed, for every case)")
                continue
            stress.append(StressCase(name=case.name, distribution=NUMERIC + case.name,
                                     tolerance=case_tolerance(harness, base,
                                                              harness.numeric.tolerance_for_case(base, case))))
    if harness.property is not None and harness.property.property_shape_index(problem) is not None:
        stress.append(property_entry(harness, problem, base, harness.property.canonical_property_case(problem)))
    return Entries(stress, lost)


def property_entry(harness: Harness, problem: str, base: dict | None, case: Any) -> StressCase:
    assert harness.property is not None  # a property case comes from their property module
    text = repr(case)
    return StressCase(name=text, distribution=PROPERTY + text, label=PROPERTY + text,
                      shapes=[harness.property.property_shape_index(problem)],
                      tolerance=case_tolerance(harness, base, harness.property.tolerance_for_property(problem, base)))


def drawn_entries(harness: Harness, problem: str, base: dict | None, seed: int) -> list[StressCase]:
    """One grading's property cases: their generate_property_cases from `seed` (their own count of generated
    examples), less the canonical case, which every grading declares. Their function prints its seed; that line is
    kept off our stdout (a grading's --json answer)."""
    if harness.property is None or harness.property.property_shape_index(problem) is None:
        return []
    with contextlib.redirect_stdout(io.StringIO()):
        _, cases = harness.property.generate_property_cases(problem, seed=seed)
    canonical = repr(harness.property.canonical_property_case(problem))
    unique = list(dict.fromkeys(repr(c) for c in cases if repr(c) != canonical))
    by_text = {repr(c): c for c in cases}
    return [property_entry(harness, problem, base, by_text[text]) for text in unique]


# ------------------------------------------------------------------------------------------------- applying

class StressInputs:
    """Applies their cases to drawn inputs, in whatever process draws them (the shim's get_inputs). The harness is
    imported on the first stress case, not when the reference loads."""

    def __init__(self, root: Path, problem: str):
        self.root, self.problem = Path(root), problem

    def knows(self, case: str) -> bool:
        return case.startswith((NUMERIC, PROPERTY))

    def apply(self, case: str, inputs: list) -> list:
        harness = load_harness(self.root)
        if case.startswith(NUMERIC):
            return self._numeric(harness, case[len(NUMERIC):], inputs)
        return self._property(harness, case[len(PROPERTY):], inputs)

    def _numeric(self, harness: Harness, name: str, inputs: list) -> list:
        import torch

        if harness.numeric is None:
            raise ValueError(f"numeric case {name!r}: their harness has no numeric_stress module")
        found = [c for c in harness.numeric.numeric_stress_cases(self.problem) if c.name == name]
        if not found:
            raise ValueError(f"their numeric_stress declares no case {name!r} for {self.problem}")
        # no models: an input-only case leaves them alone (a case that scales states is never declared)
        with harness.numeric.numeric_stress_context(torch.nn.Module(), torch.nn.Module(), inputs, found[0]) as out:
            return list(out)

    def _property(self, harness: Harness, text: str, inputs: list) -> list:
        if harness.property is None:
            raise ValueError(f"property case {text!r}: their harness has no property_stress module")
        return list(harness.property.apply_property_case(self.problem, inputs, parse_case(harness.property, text)))


def parse_case(module: ModuleType, text: str) -> Any:
    """Their property case back from its repr (`PagedShortSequenceCase(divisor=16, tail=1, stride=3)`): a dataclass
    of their module, keyword arguments of literal values; nothing is evaluated."""
    try:
        call = ast.parse(text, mode="eval").body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and not call.args):
            raise ValueError("not ClassName(key=value, ...)")
        cls = getattr(module, call.func.id, None)
        if not (isinstance(cls, type) and is_dataclass(cls)):
            raise ValueError(f"their property_stress defines no case class {call.func.id}")
        return cls(**{k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None})
    except (SyntaxError, ValueError, TypeError) as exc:
        raise ValueError(f"property case {text!r} cannot be read: {exc}") from None


__all__ = ["HARNESS_COPY", "Entries", "Harness", "StressInputs", "declared_entries", "drawn_entries",
           "harness_files", "harness_root", "load_harness", "parse_case"]
