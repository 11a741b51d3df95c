"""The messages between the grader and its stage processes, one pydantic model each (docs/grading.md, contract 4).

A stage process (`python -m kernelbench.eval.worker`) reads one `StageInput` on stdin: the job for its role and the
key that signs its reply. It writes one reply, a `JudgeReply`, `CheckReply`, `BenchReply`, `FreshReply` or
`StageFailure`, as signed JSON into its out folder. Both sides validate: the worker parses its job before any
candidate code is imported, the grader parses the reply after checking its signature. Every model forbids keys it
does not declare, so a misspelt key is an error on either side, never a silent default.

Beside the job and the reply, files cross between the processes; their headers are models too: `InputLayout` (the
arguments of a published input set) here, the tensor file's header in `kernelbench.eval.tensorfile`, and the
hardware-counter probe's job and status in `kernelbench.eval.integrity.counter_probe`.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kernelbench.base.models import Finding, InputProtocol, ProtocolTiming
from kernelbench.eval.cases import Case
from kernelbench.problems.spec import IndexOutput, Tolerance

RESULT = "worker_result.json"
SIGNATURE = "worker_result.sig"
DONE_MARKER = "check.done"  # written by the grader once the check stage has ended, whatever its end
PROGRESS_FILE = "progress"  # "<cases judged> <cases>", in the judge's out folder: shown while it runs, never judged
POLL_S = 0.02
Role = Literal["judge", "check", "bench", "fresh"]
CANDIDATE_ROLES: tuple[Role, ...] = ("check", "bench")  # the stages that import the solution (sandboxed, watched)
Line = Literal["candidate", "eager", "compiled", "sota"]
LIBRARY_LINES: tuple[Line, ...] = ("eager", "compiled", "sota")


class Message(BaseModel):
    # NaN and infinities travel as JSON's common extension (an error size can be infinite), as json.dumps wrote them
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


# ------------------------------------------------------------------------------------------------- the job

class TimingSettings(Message):
    """The problem's timing protocol as the bench stage applies it (GradingPlan.timing_settings caps it on the CPU)."""

    warmup: int
    trials: int
    max_trials: int
    stderr_target: float
    cuda_graph_below_ms: float
    input_sets: int
    max_seconds: float | None = None
    compare_trials: int = 0               # eager calls under each input protocol the score does not use


class BenchLine(Message):
    """One line a bench stage times: the candidate, or a library line for `kernelbench baselines`."""

    line: Line
    module: str


class ErrorSize(Message):
    """One floating output's rms error against the fp64 oracle: the candidate's and the reference's own."""

    output: int
    candidate: float
    reference: float
    eps: float


class RepeatDifference(Message):
    """A repeat case's output against the first call's on the same inputs, where they are not bit for bit the
    same: per differing output, how many elements differ, the largest difference and where."""

    of: str                               # the first call's case id
    output: int
    differing: int
    total: int
    max_abs_diff: float | None = None     # None: not a number type (or NaN where the other has a number)
    worst_index: list[int] | None = None


class KeptCall(Message):
    """A timed call on fresh inputs whose output the bench stage kept for the fresh stage to judge
    (portable.fresh): which base case it was drawn from, the permutation seed, and the saved output's file, or
    why the output was refused."""

    case: str
    seed: int
    call: int
    of: int
    file: str | None = None
    type_error: str | None = None
    # the grader's own record of the call (its pacer's), set before the fresh stage is sent the call: the weight
    # the output was fingerprinted under and the fingerprint the bench process committed to
    weight: int | None = None
    fingerprint: int | None = None
    # the grader's own record too: (number, seed) of earlier calls of the shape on fresh inputs (its first and its
    # latest ones, verdict.EARLIER_CALLS each), whose answers a wrong kept output is compared with
    earlier: list[tuple[int, int]] = Field(default_factory=list)


class StageJob(Message):
    """What every stage is told: the problem copy it imports, the module and line graded, the cases, where files go."""

    role: Role
    problem_dir: str
    module: str
    line: Line = "candidate"
    device: str
    cases: list[Case]
    out_dir: str
    inputs_dir: str
    model_seeds: dict[int, int]           # shape index -> the weights' seed
    tolerance: dict[str, Tolerance]
    timing: TimingSettings
    index_outputs: list[IndexOutput] = Field(default_factory=list)  # outputs judged by what they select
    # the Kahan row-sum bound of the problem (reference.py's ROW_SUM_BOUND) when it names a Kahan leak check
    kahan_bound: float | None = None
    input_wait_s: float = 600.0

    @property
    def kahan(self) -> bool:
        return self.kahan_bound is not None

    def input_path(self, case_id: str) -> Path:
        return Path(self.inputs_dir) / f"in_{case_id}.kbt"


class JudgeJob(StageJob):
    role: Literal["judge"] = "judge"
    check_dir: str | None = None          # the check stage's outputs, judged as they arrive; None: reference only
    keep_ids: list[str] = Field(default_factory=list)  # cases whose files the bench stage reads again
    save_expected: bool = False           # the reference outputs as files (the baselines' expected values)


class CheckJob(StageJob):
    role: Literal["check"] = "check"


class BenchJob(StageJob):
    role: Literal["bench"] = "bench"
    lines: list[BenchLine] = Field(default_factory=list)  # empty: the one line `line` of `module`
    expected_dir: str
    expected_prefix: Literal["out", "expected"]  # the check stage's outputs, or the reference's (baselines)
    judge_timed: bool = False             # the judge's own comparison on every timed output (a candidate's)
    rotation_seed: int | None = None
    fresh_kept: int = 0                   # timed calls per shape kept on fresh inputs for the fresh stage
    # the bench process's end of the grader's pacer (kernelbench.eval.pacing): set by the grader when it starts a
    # candidate's bench stage, whose calls on fresh inputs it then paces, stamps and chooses the kept ones of
    pacer_fd: int | None = None
    error_sizes: dict[str, list[ErrorSize]] = Field(default_factory=dict)
    l2_bytes: int | None = None

    def bench_lines(self) -> list[BenchLine]:
        return self.lines or [BenchLine(line=self.line, module=self.module)]


class FreshJob(StageJob):
    role: Literal["fresh"] = "fresh"
    bench_dir: str
    fresh: list[KeptCall]
    # the grader's own measure of what surrounds a paced call (eval.pacing): per shape, the base case whose inputs
    # this trusted process freshens and whose reference output it fingerprints, `calibration_calls` times, paced
    # through `pacer_fd` like the bench stage's calls but with no call in between
    calibrate: dict[int, str] = Field(default_factory=dict)
    calibration_calls: int = 0
    pacer_fd: int | None = None


AnyJob = Annotated[JudgeJob | CheckJob | BenchJob | FreshJob, Field(discriminator="role")]


class StageInput(Message):
    """stdin of a stage process: its job and, for a trusted stage, the key its reply is signed with (never in argv
    or the environment; a candidate stage gets none, since anything in its process is the candidate's)."""

    key: str | None = None
    job: AnyJob


# ------------------------------------------------------------------------------------------------- the replies

class DeviceInfo(Message):
    """What the judge ran on, so the grader needs neither torch nor the GPU to describe it."""

    torch: str = ""
    cuda: str = ""
    name: str | None = None
    sm_count: int | None = None
    arch: str | None = None
    l2_bytes: int | None = None
    uuid: str | None = None               # NVML's name of the GPU ("GPU-…"), which the grader's GPU sampler watches


class CaseVerdict(Message):
    """The judge's verdict on one case (a trusted process compared the candidate's saved output)."""

    reference_error: str | None = None    # the reference itself failed on the case: a problem bug
    prepared: bool = False                # reference only (no candidate beside the judge)
    missing: bool = False                 # the candidate saved no output for the case
    passed: bool = False
    messages: list[str] = Field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst_index: list[int] | None = None
    integrity: list[Finding] = Field(default_factory=list)
    error_size: list[ErrorSize] = Field(default_factory=list)
    error_size_status: str | None = None  # why no error size was measured on an oracle case
    guard_error: str | None = None        # a guard raised on an output the comparison accepted: the grader's fault
    fingerprint: int | None = None        # fresh stage: the kept output's fingerprint under its call's weight
    # fresh stage, a wrong kept output: how it compares with the answers to inputs earlier calls saw (its base set
    # unpermuted, and its base set under earlier timed calls' permutations), where such an answer differs from the
    # fresh inputs' own; None when not measured
    earlier_answer: str | None = None
    matches_earlier_answer: bool = False
    repeat: list[RepeatDifference] = Field(default_factory=list)  # a repeat case's outputs that differ bitwise
    # a case whose output later stages read again (JudgeJob.keep_ids): the digest of the file the judge compared
    # (sha256, as problems.loader.file_hashes), so that a rewrite by the candidate's process after it is seen
    output_digest: str | None = None


class CaseRecord(Message):
    """What the check stage's guards saw while the candidate ran one case (its own process)."""

    error: str | None = None              # the candidate raised
    flags: list[str] = Field(default_factory=list)   # backend flags the call changed
    inputs: list[str] = Field(default_factory=list)  # inputs the call changed
    launches: dict[str, float] | None = None         # kernels and ops recorded (None: the call was not recorded)
    type_error: str | None = None         # the output is not exactly torch.Tensor (nothing saved)
    saved: bool = False


class RefusedCallReplay(Message):
    """A timed call whose output was refused, called again eagerly outside the timed loop on the values it was
    given (bench.py `replay_refused_call`): each entry is that call's problems, empty when its output was right,
    or the error it raised. What separates the causes: an output that follows its tensors' identity rather than
    their values (state keyed on the pointer: wrong in the same tensors, right in new ones), a kernel
    wrong on these values after the calls before (wrong in new tensors too; `new_model` tells whether a model
    with no history gets them right), or a wrong output seen only inside the timed loop (right everywhere here)."""

    set_index: int
    case: str
    same_tensors: list[str]              # the refused call's own tensors, its values written back in place
    new_tensors: list[str]               # the same values in tensors allocated for the call
    new_model: list[str] | None = None   # a model built afresh, the values in new tensors (None: not built)
    answer_of: list[str] = Field(default_factory=list)  # cases whose checked output a wrong one here equals exactly

    @property
    def follows_identity(self) -> bool:
        return bool(self.same_tensors) and not self.new_tensors

    @property
    def memoised(self) -> bool:
        """Evidence of an answer kept across calls: a wrong output bit for bit another input's answer. An output
        that follows the tensors' identity alone is state keyed on the pointer (a launch plan, a padded copy), as
        likely an honest kernel's bug as a cheat."""
        return bool(self.answer_of)

    @property
    def reproduced(self) -> bool:
        return bool(self.same_tensors or self.new_tensors or self.new_model)


class ShapeTiming(Message):
    """One shape timed by the bench stage: the samples, what the timing guards saw, and the kept fresh calls."""

    error: str | None = None              # timing failed (a timed output refused, the candidate raised)
    guard_error: str | None = None        # a guard raised judging a timed output: the grader's fault
    refused_replay: RefusedCallReplay | None = None  # a refused timed call, called again outside the loop
    integrity: list[Finding] = Field(default_factory=list)  # the timed judging's findings (Kahan, error size)
    launches: dict[str, float] = Field(default_factory=dict)
    samples_ms: list[float] = Field(default_factory=list)
    method: str = ""
    sync_overhead_ms: float | None = None
    memo_probe: str = ""
    notes: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    side_stream_samples: int = 0
    host_bound_samples: int | None = None
    stress_sets: int = 0
    audited_calls: int | None = None      # timed calls audited by kernel name on a GPU (None: no windows)
    audit_recorder: str | None = None
    blind_windows: int = 0
    fresh_calls: int = 0
    fresh_kept: list[KeptCall] = Field(default_factory=list)
    persisting_l2_reset: bool | None = None  # on a GPU: persisting L2 lines reset before each call (False: no API)
    protocol: InputProtocol | None = None
    protocols: dict[InputProtocol, ProtocolTiming] = Field(default_factory=dict)


class LineTiming(Message):
    shapes: dict[int, ShapeTiming] = Field(default_factory=dict)
    error: str | None = None              # the line could not be loaded or timed at all


class CandidateReport(Message):
    """What a candidate stage's own guards saw (kernelbench.eval.worker.arming), whatever the stage's end."""

    namespace_changes: list[str] = Field(default_factory=list)
    introspection: list[str] = Field(default_factory=list)


class JudgeReply(Message):
    kind: Literal["judge"] = "judge"
    cases: dict[str, CaseVerdict]
    clock: dict[str, float] = Field(default_factory=dict)
    republished: list[str] = Field(default_factory=list)
    device_info: DeviceInfo


class CheckReply(CandidateReport):
    kind: Literal["check"] = "check"
    cases: dict[str, CaseRecord]


class BenchReply(CandidateReport):
    kind: Literal["bench"] = "bench"
    lines: dict[str, LineTiming]
    shapes: dict[int, ShapeTiming]        # the first line's (a candidate grading has one)


class FreshReply(Message):
    kind: Literal["fresh"] = "fresh"
    fresh: list[CaseVerdict]
    clock: dict[str, float] = Field(default_factory=dict)


class StageFailure(CandidateReport):
    """The stage ended with an exception. `before_candidate`: it failed before any candidate code was imported
    (loading the problem, arming a guard): the grader's or the problem's failure, never the candidate's."""

    kind: Literal["failure"] = "failure"
    fatal: str
    before_candidate: bool


Reply = JudgeReply | CheckReply | BenchReply | FreshReply | StageFailure
AnyReply = Annotated[Reply, Field(discriminator="kind")]
REPLY: TypeAdapter[Reply] = TypeAdapter(AnyReply)
REPLY_TYPES: dict[str, type[Message]] = {"judge": JudgeReply, "check": CheckReply, "bench": BenchReply,
                                          "fresh": FreshReply}


def parse_reply(data: bytes) -> Reply:
    return REPLY.validate_json(data)


def sign(key: bytes, data: bytes) -> str:
    """The reply's signature: HMAC-SHA256 under the key the stage was given on stdin."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------------------------- files

Scalar = bool | int | float | str | None


class LiteralArgument(Message):
    """An argument of the call that is not a tensor (a count, a flag, a name), as the problem's generator gave it."""

    value: Scalar | list[Scalar]


class InputLayout(Message):
    """Beside a published input file: each argument of the call, a tensor of the file (its index) or a literal."""

    arguments: list[int | LiteralArgument]


TENSOR_FILE_MAGIC = b"KBT1"


class TensorMeta(Message):
    """One tensor of a tensor file (kernelbench.eval.tensorfile): what the header says about it."""

    dtype: str = Field(pattern=r"^[a-z0-9_]+$")   # torch's name without the prefix, e.g. float32, float8_e4m3fn
    shape: list[Annotated[int, Field(ge=0)]]
    stride: list[int]
    dense: bool                           # strides a permutation of a contiguous layout (values laid back exactly)
    device: str


class TensorHeader(Message):
    """The JSON header of a tensor file: a single tensor or a tuple, the data alignment, each tensor's metadata."""

    single: bool
    align: int = Field(1, ge=1)
    tensors: list[TensorMeta]


def read_tensor_header(path: Path) -> TensorHeader:
    """The header alone (magic, 8-byte little-endian length, JSON), without reading the data or importing torch."""
    with open(path, "rb") as handle:
        if handle.read(4) != TENSOR_FILE_MAGIC:
            raise ValueError(f"{path} is not a tensor file")
        size = int.from_bytes(handle.read(8), "little")
        return TensorHeader.model_validate_json(handle.read(size))
