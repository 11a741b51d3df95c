"""The agent's disposable workspace: only the template files, a pristine copy kept outside, hashes to compare.

The agent gets reference.py, problem.yaml, the prompt (GPU fields filled), the shapes it is graded on, and its own
check.py/benchmark.py. Nothing else of the problem folder goes in (no README explaining the leak checks, no
sota.py, no baselines). Every template file is hashed before the agent starts; a file changed or deleted
afterwards makes the run INVALID, and the diff against the pristine copy is recorded as the evidence.
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
from kernelbench.problems.loader import shapes_for
from kernelbench.problems.loader import load_problem_spec
from kernelbench.problems.spec import ProblemSpec

TEMPLATE_FILES = ("reference.py", "problem.yaml")
PROMPT_FILE = "PROMPT.txt"
SHAPES_FILE = "shapes.json"
SOLUTION_FILE = "solution.py"
SIDECAR_SUFFIXES = {".py", ".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".ptx", ".txt", ".json", ".yaml"}
SKIP_DIRS = {"__pycache__", ".git", "build", ".cache", ".triton", "node_modules", ".ipynb_checkpoints"}


@dataclass
class Workspace:
    root: Path
    pristine: Path
    spec: ProblemSpec
    prompt: str
    hashes: dict[str, str] = field(default_factory=dict)

    def template_changes(self) -> list[TemplateChange]:
        """Every template file the agent changed or deleted, with a unified diff against the pristine copy."""
        changes = []
        for rel, digest in sorted(self.hashes.items()):
            path = self.root / rel
            if path.is_file() and _sha256(path) == digest:
                continue
            change = file_change(path, (self.pristine / rel).read_bytes(), rel)
            changes.append(change or TemplateChange(rel, "modified"))
        return changes

    def template_names(self) -> set[str]:
        return set(self.hashes)


def prepare_workspace(problem_dir: Path, root: Path, pristine: Path, *, profile: Any = None,
                      device: str = "cuda", shapes: str = "full") -> Workspace:
    """Fill `root` with the template files and keep a byte-identical copy in `pristine` (outside the sandbox)."""
    problem_dir = Path(problem_dir)
    spec = load_problem_spec(problem_dir)
    root.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATE_FILES:
        source = problem_dir / name
        if not source.is_file():
            raise KernelBenchError(f"the problem has no {name}", path=source,
                                   hint="every problem folder needs reference.py and problem.yaml")
        shutil.copyfile(source, root / name)
    prompt = render_prompt(_read_prompt(problem_dir), profile)
    (root / PROMPT_FILE).write_text(prompt, encoding="utf-8")
    graded = shapes_for(spec, shapes)
    (root / SHAPES_FILE).write_text(json.dumps({"mode": shapes, "shapes": graded}, indent=2) + "\n")
    write_agent_files(problem_dir, root, device=device, shapes=shapes)
    hashes = {p.relative_to(root).as_posix(): _sha256(p) for p in sorted(root.rglob("*")) if p.is_file()}
    shutil.copytree(root, pristine, dirs_exist_ok=True)
    return Workspace(root=root, pristine=pristine, spec=spec, prompt=prompt, hashes=hashes)


def _read_prompt(problem_dir: Path) -> str:
    path = problem_dir / PROMPT_FILE
    if not path.is_file():
        raise KernelBenchError("the problem has no PROMPT.txt", path=path,
                               hint="write the task the agent is given into PROMPT.txt")
    return path.read_text(encoding="utf-8")


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

def write_agent_files(problem_dir: Path, root: Path, *, device: str, shapes: str) -> None:
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
    writer(problem_dir, root, **settings)


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
        if rel.as_posix() in templates or path.suffix not in SIDECAR_SUFFIXES:
            continue
        if path.stat().st_size <= 2 << 20:
            found.append(path)
    return found


def copy_workspace(ws: Workspace, dest: Path, *, max_file: int = 256 << 10, max_total: int = 2 << 20) -> list[str]:
    """A small copy of what the agent left: its own text files and any template it changed (unchanged templates
    are the problem's, identical by hash, and left out to keep runs small). Returns what was left out."""
    skipped, total = [], 0
    unchanged = ws.template_names() - {c.path for c in ws.template_changes()} - {PROMPT_FILE}
    for path in sorted(ws.root.rglob("*")):
        rel = path.relative_to(ws.root)
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


