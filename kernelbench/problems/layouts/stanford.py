"""Stanford KernelBench's single-file layout (ScalingIntelligence/KernelBench `level*/<N>_<Name>.py`): one Python file
with `class Model`, module-level constants (`batch_size = 256`, `dim = 16384`), `get_inputs()` and
`get_init_inputs()`; the solution defines `class ModelNew` with Model's constructor and forward.

Facts of that benchmark this adapter maps: one shape (the module's constants); weights by seed (Model and ModelNew
are each built right after the same seed is set, and compared, not loaded into one another); inputs drawn by
get_inputs() after seeding; outputs compared with torch.allclose at atol = rtol = 1e-2 whatever the dtype. It has no
FLOP or byte formula, so its problems are timed without a peak_fraction.

A problem is the file itself, or a folder holding it alone (the grader's pristine copy is such a folder).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.problems.layouts.base import (
    ConceptMapping,
    Layout,
    first_paragraph,
    parse_source,
    spec_or_error,
    top_level_classes,
    top_level_functions,
)
from kernelbench.problems.layouts.shim import make_reference
from kernelbench.problems.spec import ProblemSpec, _evaluate

NAME = "stanford-kernelbench"
REQUIRED = ("get_inputs", "get_init_inputs")
TOLERANCE = 1e-2
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
SEEDS = [42, 123, 456]


AGENT_PROMPT = """\
{title}: {description}

reference.py is this problem as Stanford KernelBench writes it: class Model, built as Model(*get_init_inputs()) and
called as model(*get_inputs()), on the one shape its module constants set ({shape}).

Write solution.py defining class ModelNew, with Model's constructor and forward, that computes the same outputs as
fast as you can make it on the {{gpu_name}}: custom kernels (CUDA, Triton, ...) are the point. Your outputs must be
within atol = rtol = {tolerance:g} of Model's, on inputs drawn by get_inputs() right after a seed is set. ModelNew
is built right after the same seed as Model: it loads Model's weights where its parameters have the same names, and
draws its own in the same order where they do not.

Check it with `python check.py` and time it with `python benchmark.py` (the grader's own comparison and timing
code, in kb_eval/). Do not edit check.py, benchmark.py, reference.py or kb_eval/. The official grading runs more
cases, under seeds you do not see.
"""


class StanfordLayout(Layout):
    name = NAME
    title = "Stanford KernelBench (one file: Model, get_inputs, get_init_inputs)"
    solution_classes = ("ModelNew", "Model")
    reference_convention = "seeded-module"
    weights_by_seed = True

    def detect(self, path: Path) -> bool:
        try:
            source = problem_file(Path(path))
        except KernelBenchError:
            return False
        try:
            tree = parse_source(source)
        except KernelBenchError:
            return True  # the right shape of folder; the syntax error is reported when it is loaded
        return "Model" in top_level_classes(tree) and set(REQUIRED) <= top_level_functions(tree)

    def spec_file(self, path: Path) -> Path:
        return problem_file(Path(path))

    def reference_file(self, path: Path) -> Path:
        return problem_file(Path(path))

    def graded_files(self, path: Path) -> list[Path]:
        return [problem_file(Path(path))]

    def folder_name(self, path: Path) -> str:
        return problem_file(Path(path)).stem

    def agent_files(self, path: Path) -> tuple[Path, ...]:
        return (problem_file(Path(path)),)

    def agent_file_name(self, path: Path, file: Path) -> str:
        return "reference.py"  # the agent's scripts load the reference by that name, whatever the file is called

    def agent_prompt(self, path: Path, spec: ProblemSpec) -> str:
        shape = ", ".join(f"{k} = {v}" for k, v in spec.shapes[0].items()) or "none"
        return AGENT_PROMPT.format(title=spec.title, description=spec.description, shape=shape, tolerance=TOLERANCE)

    def baselines_dir(self, path: Path) -> Path:
        source = problem_file(Path(path))
        return source.parent / "baselines" / source.stem

    def default_deck(self, path: Path) -> str:
        source = problem_file(Path(path))
        folder = source.parent.parent if source.parent.name == source.stem else source.parent  # a pristine copy
        name = re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-") or "kernelbench"
        return name if name.startswith("stanford") else f"stanford-{name}"

    def load_spec(self, path: Path) -> ProblemSpec:
        source = problem_file(Path(path))
        tree = parse_source(source)
        classes = top_level_classes(tree)
        if "Model" not in classes or not set(REQUIRED) <= top_level_functions(tree):
            raise KernelBenchError("not a Stanford KernelBench problem: needs class Model, get_inputs() and "
                                   "get_init_inputs()", path=source)
        fields = dict(
            id=source.stem, title=source.stem.replace("_", " ").strip(),
            description=first_paragraph(ast.get_docstring(classes["Model"])) or "(Model has no docstring)",
            regime=None, ceiling=None, flops=None, bytes=None, shapes=[module_constants(tree)],
            tolerance={d: {"atol": TOLERANCE, "rtol": TOLERANCE} for d in FLOAT_DTYPES}, seeds=SEEDS)
        return spec_or_error(source, fields)

    def load_reference(self, path: Path) -> ModuleType:
        from kernelbench.problems.modules import load_module

        source = problem_file(Path(path))
        spec = self.load_spec(path)
        module = load_module(source, "reference")
        if not isinstance(getattr(module, "Model", None), type):
            raise KernelBenchError("defines no class Model", path=source)
        return make_reference(module, spec.shapes, layout=NAME, weights_by_seed=self.weights_by_seed)

    def mapping(self, path: Path) -> list[ConceptMapping]:
        spec = self.load_spec(path)
        constants = ", ".join(f"{k}={v}" for k, v in spec.shapes[0].items()) or "none"
        return [
            ConceptMapping(concept="shapes", theirs=f"the module's constants ({constants}): one shape",
                           ours="that one shape, bound to the module's globals before its functions run",
                           lost="no shape sweep and no smoke shape"),
            ConceptMapping(concept="seeds", theirs="a seed set before get_inputs() on every correctness trial",
                           ours="seeds 42, 123, 456, each mixed with the grading's secret seed, before get_inputs()"),
            ConceptMapping(concept="tolerance", theirs="torch.allclose(atol=1e-2, rtol=1e-2) whatever the dtype",
                           ours="atol = rtol = 1e-2 for every floating dtype; |out - expected| <= atol + "
                                "rtol·|expected|; integers exact"),
            ConceptMapping(concept="ceiling", theirs="no FLOP or byte formula",
                           ours="timed, no roofline: medians and speed-ups over the eager line only",
                           lost="peak_fraction, the speed-of-light gate and the DRAM-byte floor of the counters"),
            ConceptMapping(concept="solution", theirs="class ModelNew(*get_init_inputs()), built after the same "
                                                      "seed as Model",
                           ours="ModelNew (a file without it is graded through Model); the reference's state_dict "
                                "is loaded when the parameter names match, else ModelNew is built under the "
                                "reference's seed"),
            ConceptMapping(concept="forbidden ops", theirs="none listed",
                           ours="none from the problem; the lint's grader-gaming checks and the launch audit of "
                                "the reference's own code still apply",
                           lost="no library bypass check: calling the op the reference calls is allowed"),
            ConceptMapping(concept="stress cases", theirs="none", ours="none drawn",
                           lost="stress distributions"),
        ]


LAYOUT = StanfordLayout()


def problem_file(path: Path) -> Path:
    """The problem's one file: `path` itself, or the only .py file in the folder `path` (no problem.yaml there)."""
    if path.is_file():
        if path.suffix != ".py":
            raise KernelBenchError("not a Python file", path=path)
        return path
    if not path.is_dir() or (path / "problem.yaml").exists():
        raise KernelBenchError("not a single-file problem", path=path)
    files = sorted(p for p in path.iterdir() if p.suffix == ".py" and p.is_file())
    if len(files) != 1:
        raise KernelBenchError(f"holds {len(files)} Python files, not one", path=path,
                               hint="point at the problem's .py file itself")
    return files[0]


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """The module's top-level numeric constants (`N = 2048`, `dim = 1024 * 16`), in order: the problem's one shape."""
    constants: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        try:
            value = _evaluate(ast.Expression(node.value), constants)
        except (ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            constants[node.targets[0].id] = value
    return constants
