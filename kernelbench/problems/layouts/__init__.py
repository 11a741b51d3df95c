"""Problem layouts: our own and other benchmarks', each read by one adapter module into our ProblemSpec and a
reference module with our interface (docs/grading.md, contracts 1 and 2), so the grader and every guard treat
them alike. A layout is recognised by what the folder holds, never by a flag; adding a layout means adding one
module with a `LAYOUT` and naming it in LAYOUTS below (checked in order, the most specific first)."""

from __future__ import annotations

from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.problems.layouts import kernelbench_hard, native, stanford
from kernelbench.problems.layouts.base import ConceptMapping, Layout

LAYOUTS: tuple[Layout, ...] = (kernelbench_hard.LAYOUT, native.LAYOUT, stanford.LAYOUT)
BY_NAME = {layout.name: layout for layout in LAYOUTS}


def detected(path: Path) -> Layout | None:
    """The layout `path` is written in, None where it is none (listing a deck's folders)."""
    return next((layout for layout in LAYOUTS if layout.detect(Path(path))), None)


def layout_of(path: Path) -> Layout:
    """The layout `path` is written in; an error naming the path when it is none of them."""
    path = Path(path)
    if not path.exists():
        raise KernelBenchError("no such problem folder or file", path=path,
                               hint="point at a problem folder such as problems/01_fp8_gemm")
    layout = detected(path)
    if layout is not None:
        return layout
    raise KernelBenchError(
        "not a problem in any known layout", path=path,
        hint="ours: problem.yaml (id, shapes, flops, bytes) + reference.py; KernelBench-Hard: problem.yaml "
             "(flops_formula, ...) + shapes.py + reference.py; Stanford KernelBench: one .py file with Model, "
             "get_inputs() and get_init_inputs()")


__all__ = ["BY_NAME", "LAYOUTS", "ConceptMapping", "Layout", "detected", "layout_of"]
