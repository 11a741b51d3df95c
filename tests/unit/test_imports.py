"""The package's import graph: no cycle anywhere in kernelbench/, and no stage importing a later one.

Every import is read from the source (module level, inside functions, under TYPE_CHECKING), and importing a
module also runs its parent packages' __init__, so an edge to each of them is counted too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kernelbench

PACKAGE = Path(kernelbench.__file__).resolve().parent
# which top-level parts of the package each part may import (the data flow of the README's Layout: problems ->
# harness -> runs -> results -> site, the grader beside the harness); the foundation (`FOUNDATION`) is open to all
FOUNDATION = {"kernelbench", "errors", "fileio", "inputs", "text", "hardware", "base", "confinement"}
ALLOWED = {
    "base": set(),
    "problems": set(),
    "eval": {"problems"},
    "transcripts": set(),
    "results": {"problems"},
    "harness": {"eval", "problems", "results", "transcripts"},
    "sitegen": {"problems", "results", "transcripts"},
    "cli": {"eval", "problems", "results", "harness", "sitegen", "transcripts"},
    "__main__": {"cli"},
}


def module_files() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["kernelbench", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = module_files()


def imported(module: str, path: Path) -> set[str]:
    """The kernelbench modules `module` imports: each module named, the package a `from` import reads a name of,
    and the packages whose __init__ an import runs (its own parents are always run first, so not counted)."""
    named: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            submodules = {f"{base}.{a.name}" for a in node.names} & set(MODULES)
            named |= submodules
            if len(submodules) < len(node.names):  # a name defined in the package itself
                named.add(base)
    edges = {name for name in named if name in MODULES}
    for name in named:
        parts = name.split(".")
        edges |= {".".join(parts[:k]) for k in range(1, len(parts))}
    return {e for e in edges if e in MODULES and e != module and not module.startswith(e + ".")}


GRAPH = {module: imported(module, path) for module, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "kernelbench"


def test_there_is_no_import_cycle_in_the_package():
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_is_read():
    assert {"kernelbench.eval.worker.entry", "kernelbench.eval.protocol", "kernelbench.base.models"} <= set(GRAPH)
    assert "kernelbench.eval.protocol" in GRAPH["kernelbench.eval.worker.entry"]
    assert "kernelbench.eval.integrity" in GRAPH["kernelbench.harness.workspace"]  # parent packages run on import


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_no_stage_imports_a_later_one(stage):
    wrong = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if part(m) == stage for t in targets
                   if part(t) != stage and part(t) not in FOUNDATION | ALLOWED[stage])
    assert not wrong, "\n".join(wrong)


def test_the_grader_does_not_import_its_worker_for_constants():
    """The grading process talks to its stages through the protocol; only the counter probe and the sanitizer's
    probe (stage-like processes of their own, run under ncu and compute-sanitizer) share the worker's model
    building."""
    probes = {"kernelbench.eval.integrity.counter_probe", "kernelbench.eval.integrity.sanitizer_probe"}
    parent = [m for m in GRAPH if m.startswith("kernelbench.eval") and not m.startswith("kernelbench.eval.worker")
              and m not in probes]
    wrong = sorted(f"{m} -> {t}" for m in parent for t in GRAPH[m] if t.startswith("kernelbench.eval.worker"))
    assert not wrong, "\n".join(wrong)


def test_the_package_imports_nothing_from_the_tests_or_the_benchmarks():
    """Code only tests and benchmarks use lives beside them (tests/support): an installed package has neither."""
    outside = {"tests", "benchmarks"}
    wrong = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            wrong += [f"{module} -> {name}" for name in names if name.split(".")[0] in outside]
    assert not wrong, "\n".join(wrong)
