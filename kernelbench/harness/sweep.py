"""Sweep files: agents × problems × trials, with resume and retries.

A sweep file is YAML (one pydantic model; a typo is an error naming the file and line). Relative paths are
relative to the sweep file. Resume skips every (agent, problem, trial) that already has a run directory;
without `--resume` a sweep refuses to start over runs it already has, so nothing is duplicated by accident.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_json, load_yaml_model
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.jobs import Job
from kernelbench.problems.problem import Problem
from kernelbench.results.rundir import RETRIED_DIR, remove_stale_staging, set_aside
from kernelbench.harness import DEFAULT_BUDGET_S


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentEntry(Strict):
    agent: str                                  # HARNESS:MODEL[@EFFORT]
    options: dict[str, Any] = Field(default_factory=dict)
    # a model stand-in policy file (relative to the sweep file) started for each run, the CLI pointed at it, as
    # `kernelbench run --stand-in POLICY` does
    stand_in: str | None = None

    @field_validator("agent")
    @classmethod
    def _parses(cls, value: str) -> str:
        try:
            AgentSpec.parse(value)
        except KernelBenchError as exc:
            raise ValueError(exc.diagnostic.message) from None
        return value


class SweepFile(Strict):
    name: str
    description: str = ""
    agents: list[AgentEntry | str] = Field(min_length=1)
    problems: list[str] | Literal["all"] = "all"
    problems_dir: str = "../problems"
    runs: str = "../runs"
    trials: int = Field(1, ge=1)
    budget_s: float = Field(DEFAULT_BUDGET_S, gt=0)
    device: Literal["cuda", "cpu"] = "cuda"
    shapes: Literal["full", "smoke"] = "full"
    held_out: bool = True                       # each grading judges the held-out cases (docs/grading.md)
    sanitizer: bool = False                     # each CUDA grading runs the sanitizer stage (docs/grading.md; off by
    #                                             default until the stage is validated on a GPU)
    gpu: str | None = None                      # profile key; detected on the machine when absent
    sandbox: bool = True
    network: bool = True
    retries: int = Field(2, ge=0)               # extra attempts for retryable provider errors
    slots: int | None = Field(None, ge=1)       # local pool size on a CPU machine (GPUs: one run per GPU)
    gpus: list[int] | None = None               # which GPUs the local pool uses (default: all)

    def entries(self) -> list[AgentEntry]:
        return [e if isinstance(e, AgentEntry) else AgentEntry(agent=e) for e in self.agents]


class Sweep:
    """A loaded sweep file with its paths resolved."""

    def __init__(self, path: Path, spec: SweepFile):
        self.path, self.spec = path, spec
        base = path.parent
        self.problems_dir = (base / spec.problems_dir).resolve()
        self.runs_dir = (base / spec.runs).resolve()

    @classmethod
    def load(cls, path: Path) -> "Sweep":
        path = Path(path)
        if not path.is_file():
            raise KernelBenchError("no such sweep file", path=path, hint="see sweeps/demo-h100.yaml for an example")
        return cls(path, load_yaml_model(path, SweepFile))

    def problems(self) -> list[Problem]:
        """The sweep's problems, each opened (so a bad one stops the sweep before its first run): every problem of
        `problems_dir` in whatever layout it is written, or those `problems:` names."""
        from kernelbench.problems.deck import deck_problems

        if not self.problems_dir.is_dir():
            raise KernelBenchError(f"problems folder {self.problems_dir} does not exist", path=self.path,
                                   hint="fix problems_dir (relative to the sweep file)")
        return deck_problems(self.problems_dir, None if self.spec.problems == "all" else self.spec.problems)

    def options(self, entry: AgentEntry) -> dict[str, Any]:
        """The agent's options; scripted plans are looked up beside the sweep file's project first."""
        return {"plan_search": [str(self.path.parent.parent)], **entry.options}

    def stand_in(self, entry: AgentEntry) -> Path | None:
        """The entry's stand-in policy file, resolved against the sweep file's folder."""
        return (self.path.parent / entry.stand_in).resolve() if entry.stand_in else None

    def checked_options(self, entry: AgentEntry) -> dict[str, Any]:
        """The options the adapter sees in a run: a CLI pointed at a stand-in is told so (it needs no key)."""
        options = self.options(entry)
        return {**options, "model_server": True} if entry.stand_in else options

    def jobs(self) -> list[Job]:
        """Trial by trial, so a sweep cut short still has one run in every cell before any has two."""
        spec, jobs, problems = self.spec, [], self.problems()
        for trial in range(1, spec.trials + 1):
            for problem in problems:
                for entry in spec.entries():
                    jobs.append(Job(agent=entry.agent, options=self.options(entry), problem_dir=str(problem.folder),
                                    problem=problem.name,
                                    trial=trial, runs_dir=str(self.runs_dir), budget_s=spec.budget_s,
                                    device=spec.device, shapes=spec.shapes, held_out=spec.held_out,
                                    sanitizer=spec.sanitizer, sandboxed=spec.sandbox,
                                    network=spec.network, gpu=spec.gpu,
                                    stand_in=str(self.stand_in(entry)) if entry.stand_in else None))
        return jobs


def finished_keys(runs_dir: Path) -> set[tuple[str, str, int]]:
    """(agent, problem, trial) of every run directory already in `runs_dir` (set-aside retries excluded)."""
    return set(_runs_by_key(runs_dir))


def _runs_by_key(runs_dir: Path) -> dict[tuple[str, str, int], tuple[Path, str]]:
    """(agent, problem, trial) → (run directory, outcome) of every run in `runs_dir` (set-aside retries excluded)."""
    found: dict[tuple[str, str, int], tuple[Path, str]] = {}
    if not runs_dir.is_dir():
        return found
    for result in runs_dir.glob("*/result.json"):
        if result.parent.name.startswith(".") or result.parent.name == RETRIED_DIR:
            continue
        try:
            data = load_json(result)
            spec = AgentSpec(harness=data["harness"], model=data["model"], effort=data.get("effort"))
            outcome = str((data.get("grading") or {}).get("outcome", ""))
            found[(str(spec), data["problem"], int(data.get("trial", 1)))] = (result.parent, outcome)
        except (KernelBenchError, KeyError, TypeError, ValueError, AttributeError):
            continue
    return found


def set_aside_harness_errors(runs_dir: Path) -> list[Path]:
    """Runs that ended in a harness error say nothing about their agent: on --resume they are moved under
    `runs/.retried/` (kept as evidence) and run again."""
    return [set_aside(path) for path, outcome in _runs_by_key(runs_dir).values() if outcome == "harness_error"]


def pending_jobs(sweep: Sweep, resume: bool) -> tuple[list[Job], int]:
    """The jobs still to run, and how many were already done (on --resume, harness errors are redone)."""
    jobs = sweep.jobs()
    if resume:
        set_aside_harness_errors(sweep.runs_dir)
    done = finished_keys(sweep.runs_dir)
    todo = [j for j in jobs if _key(j) not in done]
    if len(todo) < len(jobs) and not resume:
        raise KernelBenchError(f"{len(jobs) - len(todo)} runs of this sweep already exist in {sweep.runs_dir}",
                               path=sweep.path, hint="pass --resume to carry on from them (finished runs are "
                                                     "skipped), or point `runs:` at another folder")
    return todo, len(jobs) - len(todo)


def _key(job: Job) -> tuple[str, str, int]:
    return (str(AgentSpec.parse(job.agent)), job.problem_name, job.trial)


# ---------------------------------------------------------------------------------------------- running

def check_sweep(sweep: Sweep) -> None:
    """Fail before the first run: every problem one an agent can be given, every CLI installed, every effort known,
    every plan's files present."""
    from kernelbench.harness import sandbox
    from kernelbench.harness.agents import get_adapter
    from kernelbench.harness.plans import find_plan, load_plan, resolve_plan

    from kernelbench.harness.workspace import check_agents_can_work_on

    problems = sweep.problems()
    for problem in problems:
        check_agents_can_work_on(problem)
    for entry in sweep.spec.entries():
        spec = AgentSpec.parse(entry.agent)
        adapter = get_adapter(spec.harness)
        adapter.find_executable()
        adapter.validate(spec, sweep.checked_options(entry))
        if entry.stand_in:
            _check_stand_in(sweep, entry, problems)
        if adapter.scripted:
            plan_path = find_plan(spec.model, sweep.options(entry)["plan_search"])
            plan = load_plan(plan_path)
            for problem in problems:
                resolve_plan(plan, plan_path, problem.name, problem.folder.parent.parent)
    if sweep.spec.sandbox:
        sandbox.probe()


def _check_stand_in(sweep: Sweep, entry: AgentEntry, problems: list[Problem]) -> None:
    """The policy file is there and reads for every problem (its errors name the file and line)."""
    from kernelbench.harness.standin.policy import load_policy

    policy = sweep.stand_in(entry)
    assert policy is not None  # check_sweep asks this of an entry with a stand-in only
    if not policy.is_file():
        raise KernelBenchError(f"{entry.agent}: no stand-in policy file at {policy}", path=sweep.path,
                               hint="`stand_in:` is relative to the sweep file (see tests/harness/standin/ for "
                                    "policies)")
    for problem in problems:
        load_policy(policy, problem=problem.name)


def run_sweep(sweep: Sweep, *, backend: str = "local", resume: bool = False, address: str | None = None,
              progress: bool = True, stop_after: float | None = None) -> list:
    """Run what is left of a sweep; returns the summaries of the runs it finished.

    `stop_after` (seconds): start no new run after that long, finish the ones in flight, and return, so a sweep
    can be carried on with `--resume` in sessions of limited length.
    """
    import queue
    import time

    from kernelbench.harness.backends import Backend, LocalPool, RayBackend, local_slots
    from kernelbench.harness.progress import SweepProgress

    check_sweep(sweep)
    remove_stale_staging(sweep.runs_dir)
    todo, skipped = pending_jobs(sweep, resume)
    jobs: queue.Queue = queue.Queue()
    for job in todo:
        jobs.put(job)
    finished: list = []
    view = SweepProgress(todo, sweep.spec.trials, skipped)

    def on_done(job: Job, summary) -> None:
        retry = summary.retryable and job.attempt <= sweep.spec.retries and summary.run_dir
        if retry:
            set_aside(Path(summary.run_dir))
            jobs.put(job.model_copy(update={"attempt": job.attempt + 1}))
        else:
            finished.append(summary)
        view.done(job, summary, retrying=bool(retry))

    deadline = time.monotonic() + stop_after if stop_after else None
    runner: Backend
    if backend == "ray":
        runner = RayBackend(address, sweep.spec.device, deadline)
    else:
        runner = LocalPool(local_slots(sweep.spec.device, sweep.spec.gpus, sweep.spec.slots), deadline)
    if progress:
        with view:
            runner.run(jobs, view.start, on_done)
    else:
        runner.run(jobs, view.start, on_done)
    return finished
