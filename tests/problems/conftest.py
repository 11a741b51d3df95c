"""Helpers for the deck's tests: every problem folder, its spec and its modules, loaded under fresh names."""

from __future__ import annotations

import importlib.util
import itertools
import os
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
SOLUTIONS = REPO / "solutions"
PROBLEM_IDS = sorted(p.name for p in PROBLEMS.glob("[0-9][0-9]_*") if (p / "problem.yaml").is_file())
_counter = itertools.count()


def load_module(path: Path) -> ModuleType:
    """Import a file under a unique module name, so two loads never share state through sys.modules."""
    spec = importlib.util.spec_from_file_location(f"_deck_test_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_reference(problem_id: str) -> ModuleType:
    return load_module(PROBLEMS / problem_id / "reference.py")


def load_solution(kind: str, problem_id: str) -> ModuleType:
    """kind is 'eager' or 'triton'; Triton solutions run on the CPU through TRITON_INTERPRET=1."""
    if kind == "triton":
        os.environ["TRITON_INTERPRET"] = "1"
        pytest.importorskip("triton", reason="triton is not installed (pip install -e '.[eval]')")
    return load_module(SOLUTIONS / kind / f"{problem_id}.py")
