"""Importing a problem's or a candidate's Python file as a module under a fresh name, and checking our interface."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

from kernelbench.errors import KernelBenchError

REQUIRED_FUNCTIONS = ("get_init_kwargs", "get_inputs")
_counter = itertools.count()


def load_module(path: Path, label: str) -> ModuleType:
    """Import a file under a fresh module name; errors name the file and line."""
    path = Path(path).resolve()
    if not path.is_file():
        raise KernelBenchError(f"{label} not found", path=path)
    name = f"_kb_{label}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # a .py file always has a spec with a loader
        raise KernelBenchError(f"{label} cannot be imported", path=path)
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


def module_constant(path: Path, name: str):
    """A module-level constant read from source, without importing the file (None where it is not a literal)."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                try:
                    return ast.literal_eval(node.value)
                except ValueError:
                    return None
    return None
