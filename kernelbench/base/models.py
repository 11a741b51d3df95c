"""The run models every stage shares: a grading's verdict (`Grading`, `Outcome`, per-case and per-shape results),
integrity findings, the environment a grading ran in, and token counts.

They sit below every stage so that each may import them: the grader (`kernelbench.eval`) writes them, the harness
puts them into `result.json` (`kernelbench.results.run.RunResult`, which re-exports them), and the site reads them.
This module imports nothing of the package but the number types beside it.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.base.numbers import (
    Count,
    Finite,
    Fraction,
    Index,
    Int64,
    NonNegative,
    Positive,
    Seconds,
    ShapeValue,
    Share,
)


class Outcome(str, Enum):
    PASS = "pass"
    CHECK_FAILED = "check_failed"          # a solution, but wrong on some shape/seed
    NO_SOLUTION = "no_solution"
    TIMEOUT = "timeout"                    # budget ran out and nothing gradable was left
    INCOMPLETE_SESSION = "incomplete_session"
    HARNESS_ERROR = "harness_error"
    PROVIDER_ERROR = "provider_error"
    BENCHMARK_FAILED = "benchmark_failed"  # correct, but timing could not be taken
    INVALID = "invalid"                    # integrity finding of severity error


class Model(BaseModel):
    # each model's validator is built when it first validates, not when its class is made: a process that only
    # unpickles records (a rebuild after one edit takes the unchanged results from the parse cache) never builds
    # the validators of the result's models (35 ms of importing them)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Tokens(Model):
    input: Count = 0
    output: Count = 0
    cache_read: Count = 0
    cache_write: Count = 0
    reasoning: Count = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class SeedResult(Model):
    shape_index: Index
    seed: Int64
    case: str = "base"                    # base | stress:<name> | property:<name>
    passed: bool
    max_abs_err: Finite | None = None
    max_rel_err: Finite | None = None
    worst_index: list[Int64] | None = None
    message: str = ""


InputProtocol = Literal["buffers", "tensors", "same"]


class ProtocolTiming(Model):
    """A shape timed under one input protocol (kernelbench.eval.portable.timing): "buffers", new values written
    into the same tensors every call (the score's); "tensors", new values in new tensors; "same", the same tensors
    and values every call (the protocol of most published boards)."""

    median_ms: NonNegative                # of the device's intervals
    host_median_ms: NonNegative           # of the host's time issuing the call (on a CPU: 0, the interval is the host's)
    samples: Count
    host_bound_samples: Count = 0         # calls the host took longer to issue than the device to run
    method: str = "events"                # events | cuda_graph


class Interval(Model):
    """A bootstrap confidence interval (percentiles of the statistic over resamples of the timed samples)."""

    low: NonNegative
    high: NonNegative
    confidence: float = 0.95


class Range(Model):
    """The least, median and greatest of a quantity's samples."""

    min: NonNegative
    median: NonNegative
    max: NonNegative


class GpuConditions(Model):
    """The GPU's state across a stretch of the bench stage, sampled through NVML by the grader's own process
    (kernelbench.eval.conditions), never reported by the candidate's. `measured` False: `reason` says why (no NVML
    on the machine, a CPU grading, no sample inside the stretch); nothing else is filled then."""

    measured: bool = False
    reason: str = ""
    gpu: str = ""                         # the GPU watched: its UUID, or its index in NVML's order
    samples: Count = 0
    period_ms: NonNegative | None = None  # the sampling period
    sm_clock_mhz: Range | None = None
    memory_clock_mhz: Range | None = None
    max_temperature_c: NonNegative | None = None
    power_w: Range | None = None          # NVML's power reading (the board's, averaged by the driver)
    throttle_reasons: list[str] = Field(default_factory=list)  # every clocks-event reason seen, idle included
    # the share of samples whose reasons held a thermal or power slowdown (the clocks held down by heat or power,
    # not by an idle GPU or a clock setting); None where no sample read the reasons
    throttled_share: Share | None = None
    throttled: bool = False               # some sample of the stretch was taken under such a slowdown
    refused: dict[str, str] = Field(default_factory=dict)  # a quantity NVML would not read, with its error


class ShapeResult(Model):
    index: Index
    shape: dict[str, ShapeValue]
    flops: NonNegative | None = None
    bytes: NonNegative | None = None
    median_ms: NonNegative | None = None
    spread_ms: NonNegative | None = None  # interquartile range of the samples
    median_interval_ms: Interval | None = None  # the median's 95% bootstrap interval over the samples
    samples_ms: list[NonNegative] = Field(default_factory=list)
    timing_method: str = ""               # events | cuda_graph
    # samples whose call the host took longer to issue than the device to run (a launch-bound call: in an eager
    # loop its pace would be the host's, e.g. Python or Triton launch overhead); None: not recorded
    host_bound_samples: Count | None = None
    host_median_ms: NonNegative | None = None  # the host's time issuing the call, median (not in the score)
    # the grader's own clock around the timed calls on fresh inputs (eval.pacing): the shortest span from the
    # nonce sent to the output's fingerprint received, and how many it saw; None where the calls were not paced
    external_span_ms: NonNegative | None = None
    paced_calls: Count | None = None
    tflops: NonNegative | None = None
    gbps: NonNegative | None = None
    fraction: Fraction | None = None      # of the governing ceiling
    baselines_ms: dict[str, NonNegative] = Field(default_factory=dict)  # eager / compiled / sota on the same GPU
    protocol: InputProtocol | None = None  # the input protocol of the samples above (None: recorded before there was a choice)
    protocols: dict[InputProtocol, ProtocolTiming] = Field(default_factory=dict)  # the scored one and the compared ones
    conditions: GpuConditions | None = None  # the GPU across this shape's paced calls (None: recorded before)


class Ceiling(Model):
    """The ceiling a score is a fraction of, and the roofs the roofline chart draws."""

    regime: Literal["compute", "memory"]
    dtype: str
    value: Positive                       # TFLOP/s for compute, GB/s for memory
    unit: Literal["TFLOP/s", "GB/s"]
    peak_tflops: Positive | None = None   # compute roof of the governing dtype
    dram_gbps: Positive | None = None     # bandwidth roof
    source: str = ""                      # datasheet or calibration


class HeldOut(Model):
    """The held-out cases of a grading (docs/grading.md, "Held-out cases"): shapes off the published grid and
    structural property cases, drawn after the run from declarations the agent never saw. Reported beside the
    published verdict, never in it: `Grading.correct` and the outcome are the published shapes' alone.

    correct: every held-out case passed; False: some failed; None: not judged (`note` says why: the published
    checks failed, the problem's own reference failed on a case, the stages did not reply).
    checks: one per case; `shape_index` indexes `shapes`, `seed` is the seed that redraws the case's inputs
    (reference.get_inputs for a shape, heldout.py's function for a property) and `case` is heldout:shape,
    heldout:stress:<name> or heldout:<property>. weights_seeds: per shape, the seed of the model's weights
    (torch.manual_seed before the reference's Model is built), so that a case is replayed whole.
    heldout_hash: of heldout.yaml and heldout.py, as graded.

    timings: the held-out shapes judged right on a passing grading, timed as the published ones are but with fewer
    trials (kernelbench.eval.stages.heldout_timing); each `index` indexes `shapes`, its median and fraction of the
    ceiling computed as a published shape's. relative_peak_fraction: the geometric mean of their fractions over the
    published shapes' (the score's aggregate), computed as the ratio of their throughputs' geometric means (the
    ceiling is one number per problem, so the two are equal, and the CPU, without a ceiling, has the figure too);
    below 1, slower off the published grid than on it; None where not measured (`timing_note` says why). Neither
    changes the verdict (docs/grading.md, "Held-out timing")."""

    correct: bool | None = None
    checks: list[SeedResult] = Field(default_factory=list)
    shapes: list[dict[str, ShapeValue]] = Field(default_factory=list)
    weights_seeds: list[Int64] = Field(default_factory=list)
    note: str = ""
    heldout_hash: str = ""
    timings: list[ShapeResult] = Field(default_factory=list)
    relative_peak_fraction: NonNegative | None = None
    timing_note: str = ""

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.checks)


class SanitizerFinding(Model):
    """Reports of one kind in one kernel from one compute-sanitizer tool, merged (`count` of them). `evidence`: the
    tool's lines of the first such report, bounded. `in_reference`: the reference's own run under the same tool on
    the same inputs reported that kernel too (a library kernel both launch: recorded, never the candidate's fault);
    None where the reference was not run. `severity`: racecheck's level (a warning never fails a grading)."""

    tool: Literal["memcheck", "racecheck"]
    kernel: str
    kind: str
    severity: Literal["error", "warning"] = "error"
    count: Count = 1
    evidence: list[str] = Field(default_factory=list)
    in_reference: bool | None = None

    @property
    def fails(self) -> bool:
        return self.severity == "error" and self.in_reference is not True


class SanitizerRun(Model):
    """One compute-sanitizer tool over the candidate's call (and, where the candidate's run reported an error,
    over the reference's call on the same inputs). `ran` False: `note` says why ("not run: ..."); nothing the
    tool did not finish is a finding or a clean bill."""

    tool: Literal["memcheck", "racecheck"]
    ran: bool = False
    note: str = ""
    seconds: Seconds = 0.0                # the candidate's run under the tool
    reference_seconds: Seconds | None = None  # the reference's run, where one was needed
    exit_code: Int64 | None = None
    findings: list[SanitizerFinding] = Field(default_factory=list)


class SanitizerResult(Model):
    """The sanitizer stage (docs/grading.md, "Sanitizer"): memcheck and racecheck over one call of the candidate
    on the smallest published shape, after the checks passed. `passed` True: every tool ran and none found an
    error in a kernel the reference's own run does not also report; False: one did (the grading fails); None: not
    run, or not every tool finished (`note` or each run's note says why)."""

    passed: bool | None = None
    note: str = ""
    shape_index: Index | None = None
    shape: dict[str, ShapeValue] = Field(default_factory=dict)
    case: str = ""                        # the case whose inputs the call was made on
    runs: list[SanitizerRun] = Field(default_factory=list)
    seconds: Seconds = 0.0                # the whole stage
    limit_s: Seconds | None = None        # the stage's time limit, shared by its runs


class Grading(Model):
    has_solution: bool = False
    correct: bool | None = None
    outcome: Outcome = Outcome.NO_SOLUTION
    reasons: list[str] = Field(default_factory=list)
    device: str = ""                      # cuda | cpu
    shapes_mode: str = "full"             # full | smoke
    ceiling: Ceiling | None = None
    checks: list[SeedResult] = Field(default_factory=list)
    shapes: list[ShapeResult] = Field(default_factory=list)
    peak_fraction: Fraction | None = None
    # the score's 95% bootstrap interval: every shape's samples resampled together, the geometric mean recomputed
    peak_fraction_interval: Interval | None = None
    baselines: dict[str, Fraction | None] = Field(default_factory=dict)  # peak_fraction of eager/compiled/sota
    conditions: GpuConditions | None = None  # the GPU across the whole bench stage (None: recorded before)
    elapsed_s: Seconds | None = None
    held_out: HeldOut | None = None       # the held-out cases, apart from the verdict (None: none declared)
    sanitizer: SanitizerResult | None = None  # compute-sanitizer's memcheck and racecheck (None: recorded before)


class Finding(Model):
    """One integrity finding: which exploit class, what evidence, how bad."""

    check: str                            # the guard that produced it (ast_lint, launch_audit, fp8_sass, ...)
    klass: int | None = Field(None, alias="class", ge=1, le=16)  # row of docs/integrity.md
    class_name: str = ""
    severity: Literal["error", "warning", "info"] = "error"
    message: str
    evidence: str = ""                    # file:line, kernel name, measured number
    file: str | None = None
    line: Int64 | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Environment(Model):
    gpu_name: str = ""
    gpu_key: str = ""
    driver: str = ""
    cuda: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    kernelbench: str = ""
    problem_hash: str = ""
    host: str = ""
    isolation: str = ""                   # how the candidate's stages ran: "bwrap", or "none: <why>"
    # sha256 of the grading code (every .py file of the kernelbench package, by path): two results with the same
    # hash were graded by the same grader, whatever its version string says
    grader_hash: str = ""
