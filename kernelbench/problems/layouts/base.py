"""What every problem layout provides (`Layout`), and the record of how another benchmark's concepts map onto ours
(`ConceptMapping`), shown on the problem's page."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kernelbench.errors import KernelBenchError
from kernelbench.problems.spec import ProblemSpec, StressCase

if TYPE_CHECKING:
    from kernelbench.problems.heldout import HeldOutSpec


class ConceptMapping(BaseModel):
    """One concept of a problem as its own benchmark defines it, what this grader does with it, and what is lost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concept: str                 # seeds, shapes, tolerance, ceiling, forbidden ops, ...
    theirs: str                  # what the problem's own layout says or does
    ours: str                    # how this grader applies it
    lost: str = ""               # what cannot be carried over ("" when nothing is)


class Layout:
    """One way of writing a problem down. Subclasses read their layout into our ProblemSpec and a reference module
    with our interface (docs/grading.md, contract 2), and say how each concept maps (`mapping`).

    `path` is what a user points at: a problem folder, or for a single-file layout the file itself or a folder
    holding only it (the grader's pristine copy is such a folder)."""

    name: str = ""
    title: str = ""
    # the solution's module class, in order of preference (a file without the first is graded through the next)
    solution_classes: tuple[str, ...] = ("Model",)
    # the files our workspace puts beside a solution (our check.py and benchmark.py, the problem's files it copies,
    # the prompt): a grading of a problem in any layout watches them there, since a solution must not edit them
    workspace_templates: tuple[str, ...] = ("check.py", "benchmark.py", "reference.py", "problem.yaml", "PROMPT.txt")
    # how the reference is called, which our workspace's scripts follow (kernelbench/eval/agent_templates): "ours"
    # (get_init_kwargs(shape), get_inputs(shape, seed, device, case, scale)) or "seeded-module" (Model(
    # *get_init_inputs()), get_inputs() drawn right after torch.manual_seed(seed), the shape the module's constants)
    reference_convention: str = "ours"
    # a candidate whose parameter names differ from the reference's is built under the reference's seed instead of
    # loading its weights (Stanford KernelBench builds both models right after the same seed)
    weights_by_seed: bool = False

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # a layout is a module's one instance: a pickled problem (a build's parse cache) comes back holding it
        return (_layout_named, (self.name,))

    def detect(self, path: Path) -> bool:
        raise NotImplementedError

    def spec_file(self, path: Path) -> Path:
        """The file the problem's spec is read from (where a page names its source, and a spec error points)."""
        raise NotImplementedError

    def load_spec(self, path: Path) -> ProblemSpec:
        raise NotImplementedError

    def load_reference(self, path: Path) -> ModuleType:
        raise NotImplementedError

    def reference_file(self, path: Path) -> Path:
        raise NotImplementedError

    def library_files(self, path: Path) -> list[Path]:
        """The problem's library line modules (its SOTA implementation), which a candidate's call must not run."""
        return []

    def graded_files(self, path: Path) -> list[Path]:
        """The files whose bytes decide a verdict (the problem hash covers them), in a fixed order."""
        raise NotImplementedError

    def copied_files(self, path: Path) -> list[Path]:
        """What the grader's pristine copy holds: the graded files and the prompt."""
        return self.graded_files(path)

    def heldout_files(self, path: Path) -> tuple[Path, Path]:
        """Where the problem's held-out declarations are written (docs/grading.md, "Held-out cases"): the
        HeldOutSpec file and its property functions' module, which may not exist. `copied_files` includes those
        that do, `copy_name` puts them in the grader's copy as heldout.yaml and heldout.py."""
        from kernelbench.problems.heldout import HELDOUT_PY, HELDOUT_YAML

        return Path(path) / HELDOUT_YAML, Path(path) / HELDOUT_PY

    def load_heldout(self, path: Path) -> HeldOutSpec | None:
        """The problem's held-out declarations (`heldout_files`, or the grader's copy of them in `path`), checked
        against its published shapes; None where it has none."""
        from kernelbench.problems.heldout import read_heldout

        return read_heldout(Path(path), self.heldout_files(path), lambda: self.load_spec(Path(path)))

    def folder_name(self, path: Path) -> str:
        return Path(path).name

    def copy_name(self, path: Path, file: Path) -> str:
        """Where one of `copied_files` lies in the grader's copy of the problem, relative to it."""
        return Path(file).name

    def drawn_stress(self, path: Path, spec: ProblemSpec, secret: int) -> list[StressCase]:
        """Stress entries one grading draws beside the spec's (another benchmark's property cases, drawn from a
        seed derived from the grading's secret seed)."""
        return []

    def baselines_dir(self, path: Path) -> Path:
        """Where `kernelbench baselines` files this problem's lines, one JSON per GPU."""
        return Path(path) / "baselines"

    def default_deck(self, path: Path) -> str:
        raise NotImplementedError

    def mapping(self, path: Path) -> list[ConceptMapping]:
        return []

    def own_checker(self, path: Path) -> OwnScript | None:
        """The benchmark's own correctness checker for this problem, where its layout ships one (None: ours only)."""
        return None

    def own_benchmark(self, path: Path) -> OwnScript | None:
        """The benchmark's own timing script for this problem, where its layout ships one (None: ours only)."""
        return None

    def agent_files(self, path: Path) -> tuple[Path, ...] | None:
        """The problem's files our workspace (our check.py and benchmark.py) gives an agent; None where our
        workspace cannot serve the layout (our scripts read our reference interface)."""
        return None

    def agent_file_name(self, path: Path, file: Path) -> str:
        """The name one of `agent_files` has in the agent's workspace."""
        return Path(file).name

    def agent_prompt(self, path: Path, spec: ProblemSpec) -> str | None:
        """The task our workspace gives an agent where the problem has no PROMPT.txt of its own, written from its
        spec and the layout's conventions (None: the layout writes none)."""
        return None

    def row_sum_bound(self, path: Path) -> float | None:
        """The reference's ROW_SUM_BOUND, read from source (the bound a Kahan leak check holds a row's sum to);
        None where it sets none."""
        from kernelbench.problems.modules import module_constant

        bound = module_constant(self.reference_file(path), "ROW_SUM_BOUND")
        return None if bound is None else float(bound)

    def roof_named(self, path: Path) -> str:
        """The GPU whose roof the benchmark's own timing script divides by ("": the layout ships no such script)."""
        return ""

    def own_workspace(self, path: Path) -> OwnWorkspace | None:
        """What an agent given this problem works in, where the benchmark ships its own scripts for agents (None:
        the workspace is ours: our check.py and benchmark.py, which read our reference interface)."""
        return None

    def content_hash(self, path: Path) -> str:
        """sha256 over the graded files, names included (a result names exactly the problem it was graded on)."""
        digest = hashlib.sha256()
        for file in self.graded_files(path):
            if file.is_file():
                digest.update(self.copy_name(path, file).encode() + b"\0" + file.read_bytes() + b"\0")
        return digest.hexdigest()


def _layout_named(name: str) -> Layout:
    from kernelbench.problems.layouts import BY_NAME

    return BY_NAME[name]


@dataclass(frozen=True)
class OwnScript:
    """A script of a benchmark's own (its checker or its timing script): `script`, run with the problem folder as
    working directory, next to the solution, with `harness` (a folder of that benchmark the script imports from)
    at `harness_at`, a path relative to the problem folder (their check.py finds its package two folders up)."""

    script: str
    harness: Path
    harness_at: str


@dataclass(frozen=True)
class OwnWorkspace:
    """A benchmark's own workspace for agents: `files`, the problem's files the agent gets (by name, in its working
    folder: the prompt, the reference, the benchmark's own check and timing scripts), and `harness`, the package
    those scripts import, at `harness_at` relative to the working folder (as OwnScript)."""

    files: tuple[str, ...]
    harness: Path
    harness_at: str


def spec_or_error(path: Path, fields: dict[str, Any]) -> ProblemSpec:
    """Our ProblemSpec from an adapter's fields; a field that does not validate is reported against `path`."""
    try:
        return ProblemSpec(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        raise KernelBenchError(f"cannot be read as a problem: {where}: {first['msg']}", path=path,
                               hint="the adapter maps this file's keys onto problem.yaml's; fix the key named") from None


def parse_source(path: Path) -> ast.Module:
    """A Python file's syntax tree (never executed); a syntax error names the file and line."""
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise KernelBenchError(f"syntax error: {exc.msg}", path=path, line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelBenchError(f"cannot read: {exc}", path=path) from None


def top_level_functions(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def top_level_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def first_paragraph(text: str | None) -> str:
    paragraph = (text or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())
