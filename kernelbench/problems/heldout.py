"""A problem's held-out cases (docs/grading.md, "Held-out cases"): `heldout.yaml` and `heldout.py` beside
problem.yaml, graded after the run and reported apart from the published shapes.

`heldout.yaml` declares shapes off the published grid (tile boundaries +-1, other batch and sequence lengths
within the problem's stated range) and structural property cases; each property names a function of
`heldout.py`, `<name>(reference, shape, seed, device) -> list`, that draws inputs of a given structure (MoE rows
moved so counts cross a tile, more tied maxima than k, ...) from `seed` alone, so a failing case is replayed from
the seed the grading prints. Neither file is copied into the agent's workspace (kernelbench.harness.workspace
copies reference.py and problem.yaml only; tests/eval/test_heldout.py checks it), and neither is part of the
problem's hash: a held-out case changes no verdict on the published shapes.

Another benchmark's problem folder is not ours to write into: its layout declares where its held-out files lie in
this project (`Layout.heldout_files`; KernelBench-Hard's: kernelbench/problems/layouts/heldout/kernelbench-hard/
<problem folder>.yaml and .py), checked against that problem's published shapes in the same way; the grader's
copy of the problem holds them under the same two names as ours.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.errors import KernelBenchError

if TYPE_CHECKING:
    from kernelbench.problems.spec import ProblemSpec

HELDOUT_YAML, HELDOUT_PY = "heldout.yaml", "heldout.py"
HELDOUT_FILES = (HELDOUT_YAML, HELDOUT_PY)
PROPERTY_NAME = r"^[a-z][a-z0-9_]*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HeldOutProperty(Strict):
    """A structure-varying case: `draws` input sets per grading, drawn by heldout.py's function `name`."""

    name: str = Field(pattern=PROPERTY_NAME)
    shape: dict[str, Any]          # on a GPU
    smoke_shape: dict[str, Any]    # on the CPU: small, CI grades it on two cores
    draws: int = Field(2, ge=1, le=8)
    about: str = ""                # what the structure probes (shown with a failure)


class HeldOutSpec(Strict):
    """`heldout.yaml`: the held-out shapes of each mode and the property cases."""

    version: int = 1
    shapes: list[dict[str, Any]] = Field(min_length=1)
    smoke_shapes: list[dict[str, Any]] = Field(min_length=1)
    properties: list[HeldOutProperty] = Field(default_factory=list)

    def shapes_for(self, mode: str) -> list[dict[str, Any]]:
        return [dict(s) for s in (self.smoke_shapes if mode == "smoke" else self.shapes)]

    def property_shape(self, prop: HeldOutProperty, mode: str) -> dict[str, Any]:
        return dict(prop.smoke_shape if mode == "smoke" else prop.shape)


def read_heldout(problem_dir: Path, declared: tuple[Path, Path], load_spec: Callable[[], ProblemSpec]
                 ) -> HeldOutSpec | None:
    """The problem's held-out declarations, checked against its published shapes (`load_spec`, by its layout);
    None where it has none. `problem_dir` is the problem folder or the grader's copy of it, which holds them as
    heldout.yaml and heldout.py whatever the layout; `declared` is where the layout has them written
    (`Layout.heldout_files`: ours beside problem.yaml, another benchmark's in this project), and an error names
    that file. Called through `Layout.load_heldout`, or `kernelbench.problems.loader.load_heldout` for a folder of
    any layout."""
    from kernelbench.fileio import load_yaml_model

    problem_dir = Path(problem_dir)
    copied = (problem_dir / HELDOUT_YAML, problem_dir / HELDOUT_PY)
    path, py = copied if copied[0].is_file() else declared
    if not path.is_file():
        return None
    try:
        heldout = load_yaml_model(path, HeldOutSpec)
        spec = load_spec()
        check_against_published(heldout, spec.shapes, spec.smoke_shapes, path)
        if heldout.properties and not py.is_file():
            raise KernelBenchError(f"properties are declared but there is no {py.name}", path=path,
                                   hint=f"write {py.name} beside it with one function per property")
    except KernelBenchError as exc:
        diag = exc.diagnostic
        if path == declared[0] or str(diag.path) != str(path):
            raise  # the declared file itself, or another file's error (the problem's own spec)
        # reported against the file a person edits, not the grader's copy of it
        raise KernelBenchError(diag.message, path=declared[0], line=diag.line, hint=diag.hint) from None
    return heldout


def check_against_published(heldout: HeldOutSpec, shapes: list[dict], smoke: list[dict], path: Path) -> None:
    """Every held-out shape has the published shapes' keys and is not one of them (else it is not held out)."""
    keys = set(shapes[0])
    published = [dict(s) for s in shapes + smoke]
    declared = [(f"shapes[{i}]", s) for i, s in enumerate(heldout.shapes)]
    declared += [(f"smoke_shapes[{i}]", s) for i, s in enumerate(heldout.smoke_shapes)]
    for p in heldout.properties:
        declared += [(f"property {p.name} shape", p.shape), (f"property {p.name} smoke_shape", p.smoke_shape)]
    for where, shape in declared:
        if set(shape) != keys:
            raise KernelBenchError(f"{where} has keys {sorted(shape)}, the published shapes {sorted(keys)}",
                                   path=path, hint="give a held-out shape exactly the keys of the problem's published "
                                                   "shapes (where the problem's shapes changed, declare them again)")
        if dict(shape) in published and not where.startswith("property"):
            raise KernelBenchError(f"{where} {shape} is a published shape, so it is not held out", path=path,
                                   hint="move it off the published grid (a tile boundary +-1, another length)")


def heldout_hash(problem_dir: Path) -> str:
    """sha256 over the held-out files, names included ('' where there are none): what a held-out result names."""
    digest = hashlib.sha256()
    found = False
    for name in HELDOUT_FILES:
        path = Path(problem_dir) / name
        if path.is_file():
            found = True
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest() if found else ""


Generator = Callable[..., list]


def load_generators(problem_dir: Path) -> dict[str, Generator]:
    """heldout.py's property functions by name (the judge draws a property case's inputs through them)."""
    from kernelbench.problems.modules import load_module

    path = Path(problem_dir) / HELDOUT_PY
    if not path.is_file():
        return {}
    module: ModuleType = load_module(path, "heldout")
    return {name: fn for name, fn in vars(module).items()
            if inspect.isfunction(fn) and fn.__module__ == module.__name__ and not name.startswith("_")}
