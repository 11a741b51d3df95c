"""Loading a problem's Python files (reference.py, sota.py) and a candidate's solution.py as modules, by path.

A command opens its problem once (kernelbench.problems.problem.open_problem) and carries the value; what is here
takes a path because it is called where only a path arrives: every stage process of a grading loads its problem's
reference from the grader's pristine copy through `load_reference` (docs/grading.md, contract 1), which reads the
folder in its own layout (kernelbench.problems.layouts: ours, KernelBench-Hard's, Stanford KernelBench's) and
presents our interface. Each module is imported under a unique name so that two loads never share state through
`sys.modules`.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernelbench.errors import KernelBenchError
from kernelbench.problems.modules import load_module
from kernelbench.problems.spec import ProblemSpec

if TYPE_CHECKING:
    from kernelbench.problems.heldout import HeldOutSpec


def shapes_for(spec: ProblemSpec, mode: str) -> list[dict[str, Any]]:
    """`full` → the problem's shapes; `smoke` → its tiny CPU shapes (falling back to the first full shape)."""
    if mode == "smoke":
        return [dict(s) for s in (spec.smoke_shapes or spec.shapes[:1])]
    if mode == "full":
        return [dict(s) for s in spec.shapes]
    raise KernelBenchError(f"unknown shapes mode '{mode}'", hint="use full or smoke")


def code_files(problem_dir: Path) -> list[Path]:
    """The problem's reference and library modules that exist (what the launch audit watches for inside a call)."""
    from kernelbench.problems.layouts import layout_of

    layout = layout_of(problem_dir)
    candidates = [layout.reference_file(Path(problem_dir)), *layout.library_files(Path(problem_dir))]
    return [p for p in candidates if p.is_file()]


def file_hashes(paths: list[Path]) -> dict[str, str]:
    """sha256 of each existing file (missing ones map to ''), to prove templates were not edited."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "" for p in paths}


def load_problem_spec(problem_dir: Path) -> ProblemSpec:
    """The spec of a problem in any layout kernelbench.problems.layouts reads (ours: problem.yaml); errors name
    the file, the line where there is one, and the key."""
    from kernelbench.problems.layouts import layout_of

    return layout_of(problem_dir).load_spec(Path(problem_dir))


def load_heldout(problem_dir: Path) -> HeldOutSpec | None:
    """A problem's held-out declarations (docs/grading.md, "Held-out cases"), read by its layout."""
    from kernelbench.problems.layouts import layout_of

    return layout_of(problem_dir).load_heldout(Path(problem_dir))


def load_reference(problem_dir: Path) -> ModuleType:
    """The problem's reference module with our interface, imported under a fresh name: what every stage process of a
    grading (and the counter probe) loads a problem through (pass a pristine copy). A problem in another
    benchmark's layout comes back adapted (kernelbench.problems.layouts.shim)."""
    from kernelbench.problems.layouts import layout_of

    return layout_of(problem_dir).load_reference(Path(problem_dir))


def load_solution(path: Path, label: str = "solution") -> ModuleType:
    """Import a candidate (solution.py, sota.py, or the reference graded as a candidate)."""
    path = Path(path)
    if str(path.parent.resolve()) not in sys.path:
        sys.path.insert(0, str(path.parent.resolve()))  # sidecar modules beside the solution
    module = load_module(path, label)
    if not any(isinstance(getattr(module, name, None), type) for name in ("Model", "ModelNew")):
        raise KernelBenchError("defines no class Model", path=path,
                               hint="define `class Model(torch.nn.Module)` with the reference's interface "
                                    "(ModelNew for a Stanford KernelBench problem)")
    return module


# ------------------------------------------------------------------------------------------------- the interface

def init_arguments(reference: ModuleType, shape: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    """How a shape's model is constructed: (positional, keyword) arguments. Ours: get_init_kwargs(shape); a layout
    with positional constructors (get_init_inputs()) gives get_init_args(shape)."""
    positional = getattr(reference, "get_init_args", None)
    if callable(positional):
        return list(positional(shape)), {}
    return [], dict(reference.get_init_kwargs(shape))


def bind_shape(reference: ModuleType, shape: dict[str, Any]) -> None:
    """A layout whose module reads shape globals gets them set to `shape` before that shape's calls."""
    bind = getattr(reference, "bind_shape", None)
    if callable(bind):
        bind(shape)


def weights_by_seed(reference: ModuleType) -> bool:
    """Whether a candidate whose parameter names differ from the reference's is built under the reference's seed
    instead of loading its state_dict (Stanford KernelBench's convention; ours loads strictly)."""
    return bool(vars(reference).get("WEIGHTS_BY_SEED", False))


def inputs_thread_safe(reference: ModuleType) -> bool:
    """Whether the reference's get_inputs may be called from several threads at once (False for a layout whose
    module draws from torch's global generator and module globals)."""
    return bool(vars(reference).get("THREAD_SAFE_INPUTS", True))


def inputs_device(reference: ModuleType, device: Any) -> str:
    """Where the judge and the fresh stage draw a case's inputs. This deck's references draw on the CPU (contract 2:
    the values are the same wherever they are drawn, and the CPU draws in threads ahead of the reference). A
    layout that marks its module `DRAWS_ON_DEVICE` (another benchmark's, drawing from torch's global generator) is
    drawn on the grading's device: there its GiB-sized draws take milliseconds instead of minutes. Every stage of
    a grading draws in the same place, so one seed gives one set of values."""
    return str(device) if vars(reference).get("DRAWS_ON_DEVICE", False) else "cpu"


def model_class(candidate: ModuleType, reference: ModuleType) -> type:
    """The candidate's model class: the problem layout's solution class (ModelNew for Stanford KernelBench) where the
    module defines it, else Model."""
    from kernelbench.problems.layouts import BY_NAME

    layout = BY_NAME.get(getattr(reference, "LAYOUT", "native"), BY_NAME["native"])
    for name in layout.solution_classes:
        cls = getattr(candidate, name, None)
        if isinstance(cls, type):
            return cls
    raise TypeError(f"the module defines none of the classes {', '.join(layout.solution_classes)}")
