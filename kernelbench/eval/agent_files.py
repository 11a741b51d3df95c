"""Self-contained check.py / benchmark.py for an agent's workspace.

The sandboxed agent cannot see this package, so the workspace gets copies: `kb_eval/` (the portable
comparison, guard and timing modules the grader itself uses, and the scripts' shared `workspace.py`),
`check.py`, `benchmark.py` and `problem.json`
(shapes, public seeds, tolerances, stress cases, timing settings, FLOPs and bytes per shape, and how the problem's
layout calls its reference and builds a solution). No secret seed, no hardware table, no grader internals travel.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelbench.eval.cases import STRESS_SHAPES, smallest_shape_indices
from kernelbench.problems.problem import Problem, as_problem

PORTABLE = Path(__file__).resolve().parent / "portable"
TEMPLATES = Path(__file__).resolve().parent / "agent_templates"
PORTABLE_MODULES = ("__init__.py", "compare.py", "fresh.py", "fingerprint_kernel.py", "guards.py", "timing.py")
SCRIPTS = ("check.py", "benchmark.py")
SCRIPT_MODULES = ("workspace.py",)   # templates the scripts import from kb_eval/


def problem_config(problem: Problem) -> dict:
    """problem.json: what the scripts need of the spec, and how the problem's layout calls its reference."""
    spec, layout = problem.spec, problem.layout

    def work(shapes: list[dict]) -> list[dict]:
        return [{"flops": spec.flops_of(s), "bytes": spec.bytes_of(s)} for s in shapes]

    smoke = spec.smoke_shapes or spec.shapes[:1]
    return {"id": spec.id, "shapes": spec.shapes, "smoke_shapes": smoke, "seeds": spec.seeds,
            "tolerance": {k: v.model_dump() for k, v in spec.tolerance.items()},
            "stress": [s.model_dump() for s in spec.stress], "timing": spec.timing.model_dump(),
            "work": work(spec.shapes), "smoke_work": work(smoke),
            # the grader draws its stress cases on the smallest shape(s) only; check.py does the same
            "stress_shapes": smallest_shape_indices(spec, spec.shapes, STRESS_SHAPES),
            "reference": layout.reference_convention, "solution_classes": list(layout.solution_classes),
            "weights_by_seed": layout.weights_by_seed}


def write_agent_files(problem: Problem | Path, workspace: Path) -> list[Path]:
    """Write check.py, benchmark.py, problem.json and kb_eval/ into `workspace`; returns the paths written."""
    problem = as_problem(problem)
    workspace = Path(workspace)
    package = workspace / "kb_eval"
    package.mkdir(parents=True, exist_ok=True)
    written = []
    for name in PORTABLE_MODULES:
        shutil.copyfile(PORTABLE / name, package / name)
        written.append(package / name)
    for name in SCRIPT_MODULES:
        shutil.copyfile(TEMPLATES / name, package / name)
        written.append(package / name)
    for name in SCRIPTS:
        shutil.copyfile(TEMPLATES / name, workspace / name)
        written.append(workspace / name)
    config = workspace / "problem.json"
    config.write_text(json.dumps(problem_config(problem), indent=2) + "\n")
    written.append(config)
    return written
