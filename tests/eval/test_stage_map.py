"""The stage map in kernelbench/eval/stages/__init__.py names real functions, in the order the grader calls them."""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import kernelbench.eval.stages
from kernelbench.eval import grade

MAP_ENTRY = re.compile(r"^\d+\. `([\w.]+)`", re.MULTILINE)
STAGE_MODULES = ("audits", "correctness", "sanitizer", "timing", "heldout",
                 "heldout_timing")  # the modules of the stages package run_stages calls


def mapped_names() -> list[str]:
    """The names of the map, relative to kernelbench.eval, in its order."""
    names = MAP_ENTRY.findall(kernelbench.eval.stages.__doc__)
    assert len(names) >= 9, "the stage map was not found in the stages package's docstring"
    return names


def resolve(name: str):
    """The object a dotted name relative to kernelbench.eval stands for: its longest importable module prefix,
    then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module("kernelbench.eval." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(f"no module of kernelbench.eval starts {name}")


def test_every_function_the_stage_map_names_exists():
    for name in mapped_names():
        assert callable(resolve(name)), name


def test_the_stage_map_lists_the_stages_in_the_order_run_stages_calls_them():
    calls = [node for node in ast.walk(ast.parse(inspect.getsource(grade.run_stages)))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.value.id in STAGE_MODULES]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))     # ast.walk goes breadth first
    called = [f"stages.{node.func.value.id}.{node.func.attr}" for node in calls]
    assert [name for name in mapped_names() if name.startswith("stages.")] == called
