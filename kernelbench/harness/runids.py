"""Run ids: `<start time>_<harness>_<model slug>_<problem>_t<trial>`, never one a run directory already has (the
directories themselves are written by kernelbench.results.rundir)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.results.rundir import name_taken


def make_run_id(started: datetime, spec: AgentSpec, problem_id: str, trial: int) -> str:
    return f"{started:%Y%m%d_%H%M%S}_{spec.harness}_{spec.slug}_{problem_id}_t{trial}"


def unique_run_id(runs_dir: Path, started: datetime, spec: AgentSpec, problem_id: str, trial: int) -> str:
    """The run id for this start time, moved on by a second while one of that name exists (never overwrite)."""
    for offset in range(3600):
        run_id = make_run_id(started + timedelta(seconds=offset), spec, problem_id, trial)
        if not name_taken(runs_dir, run_id):
            return run_id
    raise KernelBenchError(f"no free run id near {started:%Y%m%d_%H%M%S}", path=runs_dir,
                           hint="the runs folder holds an hour of runs with these names; use another --runs")
