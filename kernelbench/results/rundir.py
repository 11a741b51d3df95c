"""The one writer of run directories (`runs/<run_id>/`): `kernelbench run`, `kernelbench regrade` and the importer
all write through here.

A run directory is built in a hidden staging folder beside its final place (`.tmp-<run_id>-*`) and renamed into
place whole, so a reader never sees half a run and an interruption (Ctrl-C, a crash, a sweep cut short) leaves
what existed intact: the staging folder goes, an existing run directory is never overwritten. Hidden folders
(`.tmp-*` while a run is written, `.retried/` for attempts a sweep retried, `.conflict-*` for a finished run
whose name was taken) are skipped by every reader.

What a run directory holds (each file only where the run has it):

    result.json          RunResult (kernelbench/results/run.py), written last, through the model
    check.log            the grader's correctness log      } from the grading's report; a run that was not
    benchmark.log        the grader's timing log           } graded has neither
    solution.py          the graded solution (a run of the harness; a regraded cell keeps only its provenance)
    sources/             the sidecar sources solution.py loaded (.cu, .h, ...), as the agent left them
    workspace/           a small copy of what the agent left (`.left_out.txt`: what was too big to copy)
    harness_error.txt    the traceback of a harness failure (the run is still written, as a harness error)
    model_server.jsonl   the request log of a model stand-in the run was pointed at
    transcript.jsonl, stdout.log, stderr.log, ...   the agent CLI's own session files (its adapter names them)

The GPU a run is filed under (`RunResult.gpu`, the leaderboard's board) follows one rule, `gpu_key`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import atomic_write_text, load_json_model, read_text
from kernelbench.results.run import RESULT_FILE, RunResult

CHECK_LOG = "check.log"
BENCHMARK_LOG = "benchmark.log"
SOLUTION_FILE = "solution.py"
SOURCES_DIR = "sources"
WORKSPACE_DIR = "workspace"
LEFT_OUT_FILE = ".left_out.txt"      # inside workspace/
HARNESS_ERROR_FILE = "harness_error.txt"
MODEL_SERVER_LOG = "model_server.jsonl"

STAGING_PREFIX = ".tmp-"
OWNER_FILE = ".owner"                # in a staging folder: which process writes it
SUBMISSION_DIR = "submission"        # in a staging folder: the solution and its sources, while they are graded
RETRIED_DIR = ".retried"
CONFLICT_PREFIX = ".conflict-"

RUN_DIR_MODE = 0o755                 # as a folder made with the usual umask; a staging folder starts private (0700)

CPU = "cpu"
UNKNOWN_GPU = "unknown"


# --------------------------------------------------------------------------------------------- the GPU key

def gpu_key(device: str, measured: str | None = None, expected: str | None = None) -> str:
    """The GPU a run directory is filed under (`RunResult.gpu`), one rule for every writer:

    - a run on the CPU is filed under `cpu`, whatever GPU its prompt described: nothing was measured on a GPU;
    - a graded run (`measured`: the key the grader's environment reports) under the hardware profile the grader
      measured on, or `unknown` where the GPU matched no profile (the grader then reports the device name,
      `cuda`, which says nothing about which GPU the figures belong to);
    - a run with no grading (no solution, a harness error) under the profile it was set up for (`expected`:
      `--gpu`, the profile detected before the run, or the GPU the regrade's other cells were graded on), else
      `unknown`.

    An imported cell is filed under its board's GPU (`importer.gpu_key_for`), which names it explicitly."""
    from kernelbench.hardware import PROFILES

    if device == CPU:
        return CPU
    key = measured if measured else expected
    return key if key in PROFILES else UNKNOWN_GPU


# --------------------------------------------------------------------------------------------- staging

def name_taken(runs_dir: Path, run_id: str) -> bool:
    """Whether a run directory of this name exists or is being written."""
    return (Path(runs_dir) / run_id).exists() or any(Path(runs_dir).glob(f"{STAGING_PREFIX}{run_id}-*"))


class StagedRun:
    """A run directory being written: a hidden folder beside its final place, renamed to `<runs>/<run_id>` by
    `publish`. Make one with `staged_run`, which removes the folder if it was never published."""

    def __init__(self, runs_dir: Path, run_id: str):
        self.runs_dir, self.run_id = Path(runs_dir), run_id
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{run_id}-", dir=self.runs_dir))
        # who is writing it, so a later sweep removes only folders whose writer is gone
        (self.path / OWNER_FILE).write_text(f"{socket.gethostname()} {os.getpid()}\n")
        self.published: Path | None = None

    @property
    def submission_dir(self) -> Path:
        """Where the solution and its sources are gathered to be graded (`keep_submission` files them)."""
        return self.path / SUBMISSION_DIR

    @property
    def workspace_dir(self) -> Path:
        return self.path / WORKSPACE_DIR

    def write_text(self, name: str, text: str) -> None:
        atomic_write_text(self.path / name, text)

    def write_grade_logs(self, check_log: str, benchmark_log: str) -> None:
        """The grader's two logs, as its report holds them."""
        self.write_text(CHECK_LOG, check_log)
        self.write_text(BENCHMARK_LOG, benchmark_log)

    def write_harness_error(self, traceback_text: str) -> None:
        self.write_text(HARNESS_ERROR_FILE, traceback_text)

    def note_left_out(self, skipped: list[str]) -> None:
        """What the workspace copy left out (too big, not text, not a regular file)."""
        if skipped:
            self.write_text(f"{WORKSPACE_DIR}/{LEFT_OUT_FILE}", "\n".join(skipped) + "\n")

    def keep_solution(self, solution: Path) -> None:
        """The graded solution, at the top of the run directory."""
        shutil.copyfile(solution, self.path / SOLUTION_FILE)

    def keep_submission(self) -> None:
        """The submission folder's sidecar sources under `sources/` (solution.py is kept at the top when graded);
        a submission of solution.py alone leaves no folder."""
        folder = self.submission_dir
        if not folder.is_dir():
            return
        (folder / SOLUTION_FILE).unlink(missing_ok=True)
        if any(folder.rglob("*")):
            folder.rename(self.path / SOURCES_DIR)
        else:
            folder.rmdir()

    def publish(self, result: RunResult | None = None) -> Path:
        """Write `result` as result.json (None: the staging folder holds it already, as an unpacked run does)
        and rename the folder to `<runs>/<run_id>`; refused where that name exists."""
        if result is not None:
            self.write_text(RESULT_FILE, result.dump_json())
        final = self.runs_dir / self.run_id
        if final.exists():
            raise KernelBenchError(f"a run named {self.run_id} already exists; it was not overwritten", path=final,
                                   hint="another writer published a run of this name meanwhile; move one of them "
                                        "aside (or regrade into another --runs folder)")
        (self.path / OWNER_FILE).unlink(missing_ok=True)
        os.chmod(self.path, RUN_DIR_MODE)
        os.rename(self.path, final)
        self.published = final
        return final

    def keep_as_conflict(self) -> Path:
        """A finished run whose name is taken, kept beside the runs as evidence instead of being lost."""
        kept = self.runs_dir / f"{CONFLICT_PREFIX}{self.path.name}"
        (self.path / OWNER_FILE).unlink(missing_ok=True)
        os.rename(self.path, kept)
        self.published = kept
        return kept

    def discard(self) -> None:
        if self.published is None and self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)


@contextmanager
def staged_run(runs_dir: Path, run_id: str) -> Iterator[StagedRun]:
    """A run directory written in a staging folder; whatever ends the block before `publish` (an error, Ctrl-C),
    the folder goes and the runs folder is as it was."""
    run = StagedRun(runs_dir, run_id)
    try:
        yield run
    finally:
        run.discard()


def remove_stale_staging(runs_dir: Path) -> list[Path]:
    """Remove half-written runs left by an interrupted or crashed writer; returns what was removed."""
    removed = []
    for path in sorted(Path(runs_dir).glob(f"{STAGING_PREFIX}*")) if Path(runs_dir).is_dir() else []:
        if _writer_alive(path):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def discard_staging(runs_dir: Path, run_id: str) -> None:
    """Remove the staging folders of runs of this name, whoever writes them (a writer that will never finish)."""
    for staging in sorted(Path(runs_dir).glob(f"{STAGING_PREFIX}{run_id}-*")):
        shutil.rmtree(staging, ignore_errors=True)


def _writer_alive(staging: Path) -> bool:
    try:
        host, pid = (staging / OWNER_FILE).read_text().split()
    except (OSError, ValueError):
        return False
    if host != socket.gethostname():
        return True  # another machine's run on a shared folder: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return int(pid) != os.getpid()


def set_aside(run_dir: Path) -> Path:
    """Move a run that will be retried out of the board, keeping it as evidence under `runs/.retried/`."""
    target = Path(run_dir).parent / RETRIED_DIR / Path(run_dir).name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(run_dir, target)
    return target


# --------------------------------------------------------------------------------------------- result.json

class Saved(str, Enum):
    NEW = "new"                # a new run directory
    REPLACED = "replaced"      # result.json replaced, as asked
    UNCHANGED = "unchanged"    # result.json already says exactly this
    KEPT = "kept"              # result.json differs and was left as it is (not asked to replace it)


def save_result(runs_dir: Path, result: RunResult, *, replace: bool = False) -> Saved:
    """A run directory holding `result` alone (an imported cell): a new one is staged and renamed into place;
    an existing one keeps its other files, and its result.json is replaced (atomically) only where `replace`."""
    run_dir = Path(runs_dir) / result.run_id
    text = result.dump_json()
    path = run_dir / RESULT_FILE
    if not run_dir.exists():
        with staged_run(runs_dir, result.run_id) as run:
            run.publish(result)
        return Saved.NEW
    if not path.is_file():
        atomic_write_text(path, text)
        return Saved.NEW
    if path.read_bytes() == text.encode("utf-8"):
        return Saved.UNCHANGED
    if not replace:
        return Saved.KEPT
    atomic_write_text(path, text)
    return Saved.REPLACED


def replace_result_field(run_dir: Path, field: tuple[str, ...], value: Any) -> RunResult:
    """Set one field of a run's result.json (`("provenance", "own_checker")`) and change nothing else in the file:
    the value is spliced in where the field stands (or added at the end of its object), so fields the file lacks,
    its version and its formatting stay as they were. The file is replaced atomically, and only once the spliced
    text reads back as the stored result with that one field set. Returns that result."""
    path = Path(run_dir) / RESULT_FILE
    text = read_text(path)
    expected = load_json_model(path, RunResult, text)
    _set_field(expected, field, value, path)
    spliced = _splice(text, field, _json_value(value, indent=2 * len(field)), path)
    if load_json_model(path, RunResult, spliced) != expected:
        raise KernelBenchError(f"setting {'.'.join(field)} would change more than that field", path=path,
                               hint="check that result.json is one the harness wrote (not edited by hand)")
    atomic_write_text(path, spliced)
    return expected


def _set_field(result: RunResult, field: tuple[str, ...], value: Any, path: Path) -> None:
    holder: Any = result
    for name in field[:-1]:
        holder = getattr(holder, name)
        if holder is None:
            raise KernelBenchError(f"{'.'.join(field)}: the run has no {name}", path=path,
                                   hint="only a run with that part can have the field set")
    setattr(holder, field[-1], value)


def _json_value(value: Any, indent: int) -> str:
    """The value as the model writes it (pydantic's JSON, two-space indents), its lines shifted to `indent`."""
    from pydantic_core import to_json

    return to_json(value, indent=2, by_alias=True).decode("utf-8").replace("\n", "\n" + " " * indent)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')


def _splice(text: str, field: tuple[str, ...], value: str, path: Path) -> str:
    """`text` with the member `field` (a path of object keys) holding `value`, added where it is missing."""
    tokens = list(_TOKEN.finditer(text))
    at = 0
    for depth, key in enumerate(field):
        if at >= len(tokens) or tokens[at].group() != "{":
            raise KernelBenchError(f"{'.'.join(field[:depth]) or 'the file'} is not an object", path=path,
                                   hint="result.json holds one JSON object of the RunResult model")
        found, at = _member(tokens, at, key)
        if found:
            continue
        if depth < len(field) - 1:
            raise KernelBenchError(f"no {'.'.join(field[:depth + 1])} in the file", path=path,
                                   hint="only a run with that part can have the field set")
        indent = " " * (2 * len(field))
        member = f'{indent}"{key}": {value}'
        close = tokens[at]
        if tokens[at - 1].group() == "{":  # an empty object
            return f"{text[:close.start()]}\n{member}\n{' ' * (2 * depth)}{text[close.start():]}"
        end = tokens[at - 1].end()
        return f"{text[:end]},\n{member}{text[end:]}"
    start, end = tokens[at].start(), tokens[_after(tokens, at) - 1].end()
    return text[:start] + value + text[end:]


def _member(tokens: list[re.Match], at: int, key: str) -> tuple[bool, int]:
    """In the object opening at token `at`: (True, the index of `key`'s value) or (False, the closing brace's)."""
    i = at + 1
    while tokens[i].group() != "}":
        name, i = json.loads(tokens[i].group()), i + 2  # the key, then its colon
        if name == key:
            return True, i
        i = _after(tokens, i)
        if tokens[i].group() == ",":
            i += 1
    return False, i


def _after(tokens: list[re.Match], at: int) -> int:
    """The index of the token after the value that starts at `at`."""
    if tokens[at].group() not in "{[":
        return at + 1
    depth = 0
    for i in range(at, len(tokens)):
        token = tokens[i].group()
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(tokens)
