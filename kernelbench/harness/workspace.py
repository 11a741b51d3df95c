"""The agent's disposable workspace: only the template files, a pristine copy kept outside, hashes to compare.

The agent gets the problem's files its layout gives agents (ours: reference.py and problem.yaml; a Stanford
KernelBench file: itself, as reference.py), the prompt (its PROMPT.txt, else the one its layout writes; GPU
fields filled), the shapes it is graded on, and its own check.py/benchmark.py. Nothing else of the problem folder goes in (no README explaining the leak checks, no
sota.py, no baselines). Every template file is hashed before the agent starts; a file changed or deleted
afterwards makes the run INVALID, and the diff against the pristine copy is recorded as the evidence.

A problem of another benchmark that ships its own workspace for agents (its layout's `own_workspace`:
kernelbench.com's problems, whose check.py imports their harness package two folders up) is laid out as that
benchmark lays it out: the agent works in the problem's folder, `root`, inside a larger `top` holding the harness
where their scripts look for it; the sandbox binds `top`, and every file in it is a hashed template.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.eval.integrity.templates import TemplateChange, file_change
from kernelbench.problems.layouts.base import OwnWorkspace
from kernelbench.problems.problem import PROMPT_FILE, Problem
from kernelbench.problems.spec import ProblemSpec

SHAPES_FILE = "shapes.json"
SOLUTION_FILE = "solution.py"
SIDECAR_SUFFIXES = {".py", ".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".ptx", ".txt", ".json", ".yaml"}
SKIP_DIRS = {"__pycache__", ".git", "build", ".cache", ".triton", "node_modules", ".ipynb_checkpoints"}


@dataclass
class Workspace:
    root: Path                  # the agent's working folder (solution.py goes here)
    pristine: Path              # a copy of `top` as it was before the agent started
    spec: ProblemSpec
    prompt: str
    hashes: dict[str, str] = field(default_factory=dict)  # every template file, by its path relative to `top`
    top: Path | None = None     # the folder the sandbox binds, holding `root` (None: `root` itself)

    @property
    def bound(self) -> Path:
        return self.top or self.root

    def relative(self, path: Path) -> str:
        """`path`'s name among the templates (relative to the bound folder)."""
        return path.relative_to(self.bound).as_posix()

    def template_changes(self) -> list[TemplateChange]:
        """Every template file the agent changed or deleted, with a unified diff against the pristine copy."""
        changes = []
        for rel, digest in sorted(self.hashes.items()):
            path = self.bound / rel
            if path.is_file() and _sha256(path) == digest:
                continue
            change = file_change(path, (self.pristine / rel).read_bytes(), rel)
            changes.append(change or TemplateChange(rel, "modified"))
        return changes

    def template_names(self) -> set[str]:
        return set(self.hashes)


def prepare_workspace(problem: Problem, root: Path, pristine: Path, *, profile: Any = None,
                      device: str = "cuda", shapes: str = "full") -> Workspace:
    """Fill `root` with the template files and keep a byte-identical copy in `pristine` (outside the sandbox)."""
    own = problem.own_workspace()
    if own is not None:
        return prepare_own_workspace(problem, own, root, pristine, profile)
    files = our_workspace_files(problem)
    root.mkdir(parents=True, exist_ok=True)
    for source in files:
        if not source.is_file():
            raise KernelBenchError(f"the problem has no {source.name}", path=source,
                                   hint="every problem folder needs " + " and ".join(f.name for f in files))
        shutil.copyfile(source, root / problem.agent_file_name(source))
    prompt = render_prompt(prompt_of(problem), profile)
    (root / PROMPT_FILE).write_text(prompt, encoding="utf-8")
    graded = problem.shapes(shapes)
    (root / SHAPES_FILE).write_text(json.dumps({"mode": shapes, "shapes": graded}, indent=2) + "\n")
    write_agent_files(problem, root, device=device, shapes=shapes)
    return Workspace(root=root, pristine=pristine, spec=problem.spec, prompt=prompt,
                     hashes=keep_pristine(root, pristine))


def check_agents_can_work_on(problem: Problem) -> None:
    """An error naming the problem and what to do where an agent cannot be given it (before a run starts)."""
    if problem.own_workspace() is None:
        our_workspace_files(problem)


def our_workspace_files(problem: Problem) -> tuple[Path, ...]:
    """The problem's files our workspace gives an agent; an error where its layout has none for ours."""
    files = problem.agent_files()
    if files is None:
        raise KernelBenchError(
            f"an agent cannot be given this problem: its layout ({problem.layout.title}) ships no workspace of its "
            "own for agents, and ours (check.py, benchmark.py) reads our reference interface", path=problem.folder,
            hint="grade its solutions with `kernelbench grade`, or give agents a problem in our layout or in "
                 "kernelbench.com's with their harness package beside the deck (benchmarks/hard/src)")
    return files


def keep_pristine(bound: Path, pristine: Path) -> dict[str, str]:
    """Every file the agent is given, hashed by its path under `bound`, and a byte-identical copy in `pristine`."""
    hashes = {p.relative_to(bound).as_posix(): _sha256(p) for p in sorted(bound.rglob("*")) if p.is_file()}
    shutil.copytree(bound, pristine, dirs_exist_ok=True)
    return hashes


def prepare_own_workspace(problem: Problem, own: OwnWorkspace, top: Path, pristine: Path,
                          profile: Any) -> Workspace:
    """Another benchmark's workspace as it lays it out (see the module docstring): the problem's files in a folder
    as deep under `top` as the harness's place asks, the harness where its scripts import it from."""
    depth = Path(own.harness_at).parts.count("..")
    root = top.joinpath(*problem.folder.parts[-depth:]) if depth else top
    root.mkdir(parents=True, exist_ok=True)
    harness = (root / own.harness_at).resolve()
    if top.resolve() != harness and top.resolve() not in harness.parents:
        raise KernelBenchError(f"the benchmark's harness would lie outside the workspace: {own.harness_at}",
                               path=problem.folder)
    for name in own.files:
        shutil.copyfile(problem.folder / name, root / name)
    shutil.copytree(own.harness, harness, ignore=shutil.ignore_patterns("__pycache__"))
    prompt = render_prompt(prompt_of(problem), profile)
    (root / PROMPT_FILE).write_text(prompt, encoding="utf-8")
    return Workspace(root=root, pristine=pristine, spec=problem.spec, prompt=prompt,
                     hashes=keep_pristine(top, pristine), top=top)


def prompt_of(problem: Problem) -> str:
    prompt = problem.agent_prompt()
    if prompt is None:
        raise KernelBenchError("the problem has no PROMPT.txt", path=problem.folder / PROMPT_FILE,
                               hint="write the task the agent is given into PROMPT.txt")
    return prompt


# ------------------------------------------------------------------------------------------------ the prompt

def prompt_fields(profile: Any) -> dict[str, str]:
    """The `{field}`s a PROMPT.txt may use, from the GPU profile the run is graded on."""
    if profile is None:
        return {"hardware": "CPU", "gpu": "CPU", "gpu_name": "CPU"}
    fields = {"hardware": profile.name, "gpu": profile.name, "gpu_name": profile.name, "gpu_key": profile.key,
              "arch": profile.arch, "sm_count": str(profile.sm_count),
              "l2_mb": f"{profile.l2_bytes / 2**20:g}", "dram_gbps": f"{profile.dram_gbps:g}",
              "memory_gb": f"{getattr(profile, 'memory_gb', 0):g}"}
    return fields


def render_prompt(text: str, profile: Any) -> str:
    """Fill known `{field}`s only: prompts quote code, so any other brace is left exactly as written."""
    fields = prompt_fields(profile)
    return re.sub(r"\{(\w+)\}", lambda m: fields.get(m.group(1), m.group(0)), text)


# ------------------------------------------------------------------------------------------------ check.py etc.

def write_agent_files(problem: Problem, root: Path, *, device: str, shapes: str) -> None:
    """The agent's own check.py / benchmark.py, produced by the evaluation stage (`kernelbench.eval.agent_files`)."""
    try:
        module = importlib.import_module("kernelbench.eval.agent_files")
    except ModuleNotFoundError as exc:
        if exc.name not in ("kernelbench.eval.agent_files", "kernelbench.eval"):
            raise
        raise KernelBenchError("kernelbench.eval.agent_files is not available, so the workspace cannot get its "
                               "check.py and benchmark.py", hint="install the evaluation stage "
                               "(pip install -e '.[eval]') or update kernelbench") from None
    writer = module.write_agent_files
    # the scripts choose the device themselves and take --smoke; newer writers may also take these settings
    accepted = inspect.signature(writer).parameters
    settings = {k: v for k, v in {"device": device, "shapes": shapes}.items() if k in accepted}
    writer(problem, root, **settings)


# ------------------------------------------------------------------------------------------------ after the agent

def collect_submission(ws: Workspace, dest: Path) -> Path | None:
    """Copy solution.py and the sources it may load beside it into a clean folder for the grader.

    Template files are left out on purpose: the grader must import the pristine reference, never a copy the
    agent could have edited.
    """
    solution = ws.root / SOLUTION_FILE
    if not solution.is_file():
        return None
    dest.mkdir(parents=True, exist_ok=True)
    for path in _agent_sources(ws):
        target = dest / path.relative_to(ws.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return dest / SOLUTION_FILE


def _agent_sources(ws: Workspace) -> list[Path]:
    templates = ws.template_names()
    found = []
    for path in sorted(ws.root.rglob("*")):
        rel = path.relative_to(ws.root)
        if not path.is_file() or path.is_symlink() or any(part in SKIP_DIRS for part in rel.parts):
            continue
        if ws.relative(path) in templates or path.suffix not in SIDECAR_SUFFIXES:
            continue
        if path.stat().st_size <= 2 << 20:
            found.append(path)
    return found


def copy_workspace(ws: Workspace, dest: Path, *, max_file: int = 256 << 10, max_total: int = 2 << 20) -> list[str]:
    """A small copy of what the agent left: its own text files and any template it changed (unchanged templates
    are the problem's, identical by hash, and left out to keep runs small). Returns what was left out."""
    skipped, total = [], 0
    prompt = ws.relative(ws.root / PROMPT_FILE)
    unchanged = ws.template_names() - {c.path for c in ws.template_changes()} - {prompt}
    for path in sorted(ws.bound.rglob("*")):
        rel = path.relative_to(ws.bound)
        if path.is_dir() or any(part in SKIP_DIRS for part in rel.parts) or rel.as_posix() in unchanged:
            continue
        size = path.stat().st_size if path.is_file() and not path.is_symlink() else -1
        if size < 0 or size > max_file or total + size > max_total or not _is_text(path):
            skipped.append(f"{rel.as_posix()} ({'not a regular file' if size < 0 else f'{size} bytes'})")
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += size
    return skipped


def _is_text(path: Path) -> bool:
    with open(path, "rb") as handle:
        return b"\0" not in handle.read(8192)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


