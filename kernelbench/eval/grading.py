"""One grading's plan and state.

`GradingPlan`: what is graded and how (problem, solution, device, shapes, cases, the secret seed, limits), where
its files go (a scratch folder holding the pristine problem copy, the solution copy, inputs and each stage's
outputs), the guards it runs with, and the typed job each stage is sent (kernelbench.eval.protocol).
`GradingState`: what the stages found so far (the Grading being filled, findings, logs, stage seconds, what the
judge reported about the device).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelbench import confinement
from kernelbench.base.models import Finding, Grading
from kernelbench.errors import KernelBenchError
from kernelbench.eval.cases import Case, build_cases, heldout_cases, mix_seed, secret_seed, timed_stress_cases
from kernelbench.eval.environment import profile_from_info
from kernelbench.eval.gradelog import GradingLog
from kernelbench.eval.isolation import SOLUTION_FOLDER, Isolation, isolation_for
from kernelbench.eval.process import StageHandle, StageRun, finish_stage, start_stage
from kernelbench.eval.protocol import (
    CANDIDATE_ROLES,
    AnyJob,
    BenchJob,
    CheckJob,
    DeviceInfo,
    ErrorSize,
    FreshJob,
    JudgeJob,
    Line,
    TimingSettings,
)
from kernelbench.eval.solution_folder import SolutionCopy, copy_solution_folder
from kernelbench.hardware import GpuProfile
from kernelbench.problems.heldout import heldout_hash
from kernelbench.problems.loader import file_hashes, shapes_for
from kernelbench.problems.problem import Problem
from kernelbench.problems.spec import ProblemSpec

if TYPE_CHECKING:
    from kernelbench.eval.integrity.hooks import Guards
    from kernelbench.eval.integrity.machine_code import MachineCode

SHM_MIN_FREE = 16 << 30
CPU_WARMUP, CPU_TRIALS = 1, 3
# Limits stop hangs; they are not a speed test. The check stage's covers the slowest honest line measured, a
# Python-loop GQA rewrite (eager 08, ~60k ops a call): 271 s on the H100 with its checked calls launch-audited
# (benchmarks/results/h100_integrity_session5.md); an honest slow rewrite must not fail on time.
# The sanitizer's covers both tools over one call on the smallest shape, and the reference's call under each where
# the candidate's reported something (docs/grading.md, "Sanitizer"): the tools slow kernels tens of times over.
STAGE_LIMITS_S = {"check": 600.0, "reference": 300.0, "bench": 420.0, "counters": 30.0, "fresh": 300.0,
                  "heldout": 300.0, "heldout_bench": 120.0, "sanitizer": 300.0}
# Timed calls per shape whose outputs (on fresh inputs, chosen after each call returned) the fresh stage judges
# afterwards: each costs a reference call (and an fp64 oracle where the problem needs one) in a trusted process.
FRESH_KEPT_PER_SHAPE = 2


@dataclass(frozen=True)
class GradingOptions:
    device: str = "cuda"
    shapes: str = "full"                 # full | smoke
    line: Line = "candidate"
    lint: bool = True                    # the static lint and the launch audit (off for the deck's own lines)
    timing: bool = True                  # the bench stage (off for `problem check`)
    counters: bool = True                # the hardware-counter pass on CUDA gradings
    # the held-out stage (docs/grading.md, "Held-out cases"): on for every real grading; the grader's caller may
    # turn it off where the column is not wanted (tests that grade for another reason), and the result says so
    held_out: bool = True
    # the sanitizer stage (docs/grading.md, "Sanitizer"): off by default until validated on a GPU, since a stage
    # that could fail an honest kernel must be seen to pass the deck's honest solutions first
    sanitizer: bool = False
    limits: dict[str, float] = field(default_factory=dict)

    def limit(self, stage: str) -> float:
        return {**STAGE_LIMITS_S, **self.limits}["reference" if stage == "judge" else stage]


@dataclass
class GradingPlan:
    solution: Path
    problem: Problem                     # the problem as the command opened it (its folder is never imported)
    workdir: Path
    options: GradingOptions
    guards: Guards
    spec: ProblemSpec
    shapes: list[dict[str, Any]]
    secret: int
    cases: list[Case]
    timed_stress: list[Case]             # stress cases mixed into the timed rotation (cases.timed_stress_cases)
    pristine: Path                       # the grader's copy of the problem files, which every stage imports
    module: Path                         # the grader's copy of the solution
    build_env: dict[str, str]
    isolation: Isolation
    pristine_hashes: dict[str, str]
    kahan_bound: float | None
    graded_bytes: bytes = b""            # the solution as the lint read it: every stage must import these bytes
    brought: SolutionCopy = field(default_factory=SolutionCopy)  # what came with it, beside it
    brought_hashes: dict[str, str] = field(default_factory=dict)
    heldout: list[Case] = field(default_factory=list)  # held-out cases, graded after the others (stages.heldout)
    heldout_shapes: list[dict[str, Any]] = field(default_factory=list)  # theirs, by shape index - len(shapes)
    heldout_note: str = ""               # why there are none, where the problem declares them but they failed to load
    heldout_hash: str = ""

    @classmethod
    def create(cls, solution: Path, problem: Problem, workdir: Path, options: GradingOptions,
               guards: Guards) -> GradingPlan:
        secret = secret_seed()
        spec = problem.graded_spec(secret)
        shapes = shapes_for(spec, options.shapes)
        cases = build_cases(spec, shapes, secret, options.shapes)
        timed_stress = timed_stress_cases(spec, shapes, secret, cases, options.shapes) if options.timing else []
        known = {c.id for c in cases}
        cases += [c for c in timed_stress if c.id not in known]
        pristine = problem.pristine_copy(workdir / "problem")
        module = workdir / SOLUTION_FOLDER / solution.name
        module.parent.mkdir(parents=True)
        brought = copy_solution_folder(solution, module.parent)
        (workdir / "inputs").mkdir()
        # the sandboxed stages run as an uid of their own: what they read must be readable whatever its mode was
        confinement.readable_by_sandbox(pristine, module.parent, workdir / "inputs")
        plan = cls(solution, problem, workdir, options, guards, spec, shapes, secret, cases, timed_stress,
                   pristine, module, guards.build_env(workdir / "build"), isolation_for(options.device), {},
                   guards.kahan_bound(spec, problem))
        plan.pristine_hashes = file_hashes(plan.pristine_files())
        plan.graded_bytes = module.read_bytes()
        plan.brought = brought
        plan.brought_hashes = file_hashes([module.parent / rel for rel in brought.files])
        if options.held_out:
            plan.plan_heldout()
        return plan

    def plan_heldout(self) -> None:
        """The held-out cases (kernelbench.problems.heldout), drawn with this grading's secret. Declarations that do
        not load are noted as the reason there are none: they never stop the grading of the published shapes."""
        try:
            heldout = self.problem.layout.load_heldout(self.pristine)
        except KernelBenchError as exc:
            self.heldout_note = f"the held-out declarations could not be loaded: {exc}"
            return
        if heldout is None:
            return
        self.heldout = heldout_cases(self.spec, heldout, self.options.shapes, self.secret, len(self.shapes))
        by_index = {c.shape_index: c.shape for c in self.heldout}
        self.heldout_shapes = [by_index[i] for i in sorted(by_index)]
        self.heldout_hash = heldout_hash(self.pristine)

    @property
    def device(self) -> str:
        return self.options.device

    def pristine_files(self) -> list[Path]:
        return self.problem.pristine_paths(self.pristine)

    def timing_cases(self) -> list[Case]:
        """The base cases the bench stage times: the problem's `input_sets` per shape, in the shapes' order."""
        base = [c for c in self.cases if c.label == "base"]
        per_shape = self.spec.timing.input_sets
        return [c for i in range(len(self.shapes)) for c in [b for b in base if b.shape_index == i][:per_shape]]

    def model_seeds(self) -> dict[int, int]:
        indices = [*range(len(self.shapes)), *(c.shape_index for c in self.heldout)]
        return {i: mix_seed(0, self.secret, i, "weights") for i in indices}

    def timing_settings(self) -> TimingSettings:
        """The problem's protocol on a GPU; on the CPU (CI, smoke shapes) a few calls exercise the same logic."""
        spec = self.spec.timing
        settings = TimingSettings(warmup=spec.warmup, trials=spec.trials, max_trials=spec.max_trials,
                                  stderr_target=spec.stderr_target, cuda_graph_below_ms=spec.cuda_graph_below_ms,
                                  input_sets=spec.input_sets, compare_trials=spec.compare_trials,
                                  max_seconds=self.options.limits.get("shape_seconds") or spec.shape_seconds)
        if self.device == "cpu":
            settings = settings.model_copy(update=dict(
                warmup=min(settings.warmup, CPU_WARMUP), trials=min(settings.trials, CPU_TRIALS),
                max_trials=min(settings.max_trials, CPU_TRIALS), stderr_target=0.0,
                compare_trials=0))  # a CPU sample is the host's: the protocols would differ only by noise
        return settings

    def job_fields(self, stage: str, cases: list[Case]) -> dict[str, Any]:
        """What every stage's job holds; `stage` names its out folder."""
        return dict(problem_dir=str(self.pristine), module=str(self.module), line=self.options.line,
                    device=self.device, cases=cases, out_dir=str(self.workdir / stage),
                    inputs_dir=str(self.workdir / "inputs"), model_seeds=self.model_seeds(),
                    tolerance=self.spec.tolerance, timing=self.timing_settings(), kahan_bound=self.kahan_bound,
                    index_outputs=self.spec.index_outputs)

    def judge_job(self, cases: list[Case], **extra: Any) -> JudgeJob:
        return JudgeJob(**{**self.job_fields("judge", cases), **extra})

    def check_job(self) -> CheckJob:
        return CheckJob(**self.job_fields("check", self.cases))

    def bench_job(self, cases: list[Case], **extra: Any) -> BenchJob:
        return BenchJob(**{**self.job_fields("bench", cases), **extra})

    def fresh_job(self, **extra: Any) -> FreshJob:
        return FreshJob(**{**self.job_fields("fresh", self.timing_cases()), **extra})

    def start(self, job: AnyJob, gpu_uuid: str | None = None) -> StageHandle:
        """A stage's process; a bench stage on a GPU with the grader sampling that GPU (eval.conditions)."""
        sandbox = self.isolation if job.role in CANDIDATE_ROLES else None
        # a candidate's timed calls on fresh inputs are paced by the grader's own process (eval.pacing)
        pace = (isinstance(job, BenchJob) and job.fresh_kept > 0 and job.line == "candidate") or (
            isinstance(job, FreshJob) and job.calibration_calls > 0)
        watch_gpu = isinstance(job, BenchJob) and job.device == "cuda"
        return start_stage(job, cwd=self.workdir, extra_env=self.build_env, sandbox=sandbox, pace=pace,
                           watch_gpu=watch_gpu, gpu_uuid=gpu_uuid)

    def missing_timing_files(self) -> list[str]:
        """The timed cases' inputs and checked outputs (the bench stage would wait for them until its limit)."""
        paths = []
        for case in self.timing_cases() + self.timed_stress:
            paths += [self.workdir / "inputs" / f"in_{case.id}.kbt", self.workdir / "check" / f"out_{case.id}.kbt"]
        return [p.name for p in paths if not p.is_file()]


@dataclass
class GradingState:
    grading: Grading
    findings: list[Finding] = field(default_factory=list)
    log: GradingLog = field(default_factory=GradingLog)
    stages: dict[str, float] = field(default_factory=dict)   # wall seconds per stage, judge.<step> for its steps
    device_info: DeviceInfo = field(default_factory=DeviceInfo)
    profile: GpuProfile | None = None    # known once the judge has reported the device
    launches: dict[str, float] = field(default_factory=dict)  # what the checked calls launched
    launches_by_shape: dict[int, dict[str, float]] = field(default_factory=dict)  # the same, per shape
    machine_code: MachineCode | None = None  # the code of the kernels the solution built (audits.machine_code)
    error_sizes: dict[str, list[ErrorSize]] = field(default_factory=dict)  # the judge's, per oracle case
    timed: bool = False
    wrong_timed_shapes: list[int] = field(default_factory=list)  # shapes whose timed calls met a wrong output
    unjudged: str = ""                   # why the kept fresh-input calls could not be judged, if they could not
    profiled_calls: list = field(default_factory=list)  # the counter pass's call (integrity.counters.ProfiledCall)
    judged_digests: dict[str, str] = field(default_factory=dict)  # the judge's, per case later stages read again
    outputs_rewritten: bool = False  # one of those files differs from what the judge compared (audits.problem_copy)

    def add(self, label: str, found: list[Finding]) -> None:
        """Findings of one guard, logged under its label."""
        self.findings += found
        self.log.findings(label, found)

    def clock(self, name: str, started: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + time.monotonic() - started, 3)

    def note_device(self, info: DeviceInfo, device: str) -> None:
        self.device_info, self.profile = info, profile_from_info(info)
        if device == "cuda" and self.profile is None:
            self.log.check.append(f"[hardware] {info.name} matches no profile: no roofline")


def run_stage(plan: GradingPlan, state: GradingState, job: AnyJob, name: str | None = None) -> StageRun:
    """One stage from start to end under its limit, logged and clocked under `name` (default: its role)."""
    name = name or job.role
    run = finish_stage(plan.start(job, state.device_info.uuid), plan.options.limit(name))
    state.log.stage(run)
    state.stages[name] = round(state.stages.get(name, 0.0) + run.elapsed_s, 3)
    return run


def scratch_dir() -> str | None:
    """RAM-backed /dev/shm when it has room (gigabyte inputs and outputs move between stages), else the default."""
    try:
        usage = shutil.disk_usage("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if usage.free > SHM_MIN_FREE else None
