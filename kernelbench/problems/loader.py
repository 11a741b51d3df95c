"""Loading a problem's Python files (reference.py, sota.py) and a candidate's solution.py as modules.

Grading never imports from the problem folder or the agent's workspace directly: it copies the files it trusts
into a fresh folder first (`pristine_copy`), hashes the problem (`problem_hash`) so a result names exactly the
problem it was graded against, and imports each file under a unique module name so that two loads never share
state through `sys.modules`. Every stage process of a grading loads its problem's reference through
`load_reference` (docs/grading.md, contract 1): the one place a loader for another folder layout plugs in.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.problems.spec import ProblemSpec, load_problem_spec

# files grading depends on (the problem hash covers these); the prompt, README and baselines change no verdict
GRADED_FILES = ("problem.yaml", "reference.py", "sota.py")
PROBLEM_FILES = (*GRADED_FILES, "PROMPT.txt")
REQUIRED_FUNCTIONS = ("get_init_kwargs", "get_inputs")
_counter = itertools.count()


@dataclass
class Problem:
    """A problem folder with its validated spec and its reference module."""

    directory: Path
    spec: ProblemSpec
    reference: ModuleType
    content_hash: str

    def shapes(self, mode: str) -> list[dict[str, Any]]:
        return shapes_for(self.spec, mode)


def shapes_for(spec: ProblemSpec, mode: str) -> list[dict[str, Any]]:
    """`full` → the problem's shapes; `smoke` → its tiny CPU shapes (falling back to the first full shape)."""
    if mode == "smoke":
        return [dict(s) for s in (spec.smoke_shapes or spec.shapes[:1])]
    if mode == "full":
        return [dict(s) for s in spec.shapes]
    raise KernelBenchError(f"unknown shapes mode '{mode}'", hint="use full or smoke")


def problem_hash(problem_dir: Path) -> str:
    """sha256 over the files grading depends on, in a fixed order, names included."""
    digest = hashlib.sha256()
    for name in GRADED_FILES:
        path = Path(problem_dir) / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def file_hashes(paths: list[Path]) -> dict[str, str]:
    """sha256 of each existing file (missing ones map to ''), to prove templates were not edited."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "" for p in paths}


def pristine_copy(problem_dir: Path, dest: Path) -> Path:
    """Copy the problem's defining files into `dest/<id>` and return that folder."""
    problem_dir = Path(problem_dir)
    target = Path(dest) / problem_dir.name
    target.mkdir(parents=True, exist_ok=True)
    for name in PROBLEM_FILES:
        if (problem_dir / name).is_file():
            shutil.copy2(problem_dir / name, target / name)
    return target


def load_module(path: Path, label: str) -> ModuleType:
    """Import a file under a fresh module name; errors name the file and line."""
    path = Path(path).resolve()
    if not path.is_file():
        raise KernelBenchError(f"{label} not found", path=path)
    name = f"_kb_{label}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise KernelBenchError(f"{label} has a syntax error: {exc.msg}", path=path, line=exc.lineno) from None
    return module


def check_interface(module: ModuleType, path: Path, *, needs_inputs: bool) -> None:
    """docs/grading.md, contract 2: a `Model` nn.Module class, and (for references) get_init_kwargs and get_inputs."""
    if not isinstance(getattr(module, "Model", None), type):
        raise KernelBenchError("defines no class Model", path=path,
                               hint="define `class Model(torch.nn.Module)` with the reference's interface")
    if needs_inputs:
        for fn in REQUIRED_FUNCTIONS:
            if not callable(getattr(module, fn, None)):
                raise KernelBenchError(f"defines no function {fn}()", path=path,
                                       hint="see docs/grading.md, contract 2: get_init_kwargs(shape), get_inputs(...)")


def load_reference(problem_dir: Path) -> ModuleType:
    """The problem's reference module, imported under a fresh name and checked for its interface: what every
    stage process of a grading (and the counter probe) loads a problem through (pass a pristine copy)."""
    ref_path = Path(problem_dir) / "reference.py"
    reference = load_module(ref_path, "reference")
    check_interface(reference, ref_path, needs_inputs=True)
    return reference


def load_problem(problem_dir: Path) -> Problem:
    """Validate problem.yaml and import reference.py from `problem_dir` (`problem check`, the deck's tests)."""
    problem_dir = Path(problem_dir)
    spec = load_problem_spec(problem_dir)
    return Problem(directory=problem_dir, spec=spec, reference=load_reference(problem_dir),
                   content_hash=problem_hash(problem_dir))


def load_solution(path: Path, label: str = "solution") -> ModuleType:
    """Import a candidate (solution.py, sota.py, or the reference graded as a candidate)."""
    path = Path(path)
    if str(path.parent.resolve()) not in sys.path:
        sys.path.insert(0, str(path.parent.resolve()))  # sidecar modules beside the solution
    module = load_module(path, label)
    check_interface(module, path, needs_inputs=False)
    return module
