"""Run ids and run directories: built in a hidden folder beside the final one, then renamed into place.

A run directory appears whole or not at all, and an existing one is never overwritten. Hidden folders
(`.tmp-*` while a run is being written, `.retried/` for attempts a sweep retried) are skipped by every reader.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agentspec import AgentSpec

STAGING_PREFIX = ".tmp-"
RETRIED_DIR = ".retried"


def make_run_id(started: datetime, spec: AgentSpec, problem_id: str, trial: int) -> str:
    return f"{started:%Y%m%d_%H%M%S}_{spec.harness}_{spec.slug}_{problem_id}_t{trial}"


def unique_run_id(runs_dir: Path, started: datetime, spec: AgentSpec, problem_id: str, trial: int) -> str:
    """The run id for this start time, moved on by a second while one of that name exists (never overwrite)."""
    for offset in range(3600):
        run_id = make_run_id(started + timedelta(seconds=offset), spec, problem_id, trial)
        taken = (runs_dir / run_id).exists() or any(runs_dir.glob(f"{STAGING_PREFIX}{run_id}-*"))
        if not taken:
            return run_id
    raise KernelBenchError(f"no free run id near {started:%Y%m%d_%H%M%S}", path=runs_dir,
                           hint="the runs folder holds an hour of runs with these names; use another --runs")


OWNER_FILE = ".owner"


def create_staging(runs_dir: Path, run_id: str) -> Path:
    runs_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{run_id}-", dir=runs_dir))
    # who is writing it, so a later sweep removes only folders whose writer is gone
    (staging / OWNER_FILE).write_text(f"{socket.gethostname()} {os.getpid()}\n")
    return staging


def publish(staging: Path, runs_dir: Path, run_id: str) -> Path:
    """Rename the finished staging folder to `runs/<run_id>`; refuse if that name exists."""
    final = runs_dir / run_id
    if final.exists():
        raise KernelBenchError(f"a run named {run_id} already exists; it was not overwritten", path=final,
                               hint=f"the new attempt is kept in {staging}")
    (staging / OWNER_FILE).unlink(missing_ok=True)
    os.rename(staging, final)
    return final


def remove_stale_staging(runs_dir: Path) -> list[Path]:
    """Remove half-written runs left by an interrupted or crashed harness; returns what was removed."""
    removed = []
    for path in sorted(runs_dir.glob(f"{STAGING_PREFIX}*")) if runs_dir.is_dir() else []:
        if _writer_alive(path):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


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
    target = run_dir.parent / RETRIED_DIR / run_dir.name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(run_dir, target)
    return target
