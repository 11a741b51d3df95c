"""The judge stage (trusted code only): inputs out, expected outputs kept in memory, verdicts back.

It runs beside the candidate's check stage. For every case it generates the inputs, publishes them as files
for the candidate, runs the reference on its own copy and keeps the expected output (and, for one case per
shape, an fp64 oracle) in its memory. Then it compares each saved candidate output as it arrives: exact
metadata, values within tolerance, the problem's own compare() hook, and the error-size numbers against the
oracle. Nothing the candidate can read ever holds an expected value.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbench.eval.cases import Case
from kernelbench.eval.failures import GuardFailed, describe
from kernelbench.eval.protocol import (
    DONE_MARKER,
    POLL_S,
    PROGRESS_FILE,
    CaseVerdict,
    InputLayout,
    JudgeJob,
    JudgeReply,
    LiteralArgument,
    RepeatDifference,
)
from kernelbench.eval.tensorfile import layout_path, load_tensors, load_tensors_digested, save_tensors
from kernelbench.eval.worker.comparison import Comparer, error_sizes
from kernelbench.eval.worker.context import StageContext, device_info

MAX_REPUBLISH = 3


class StageClock:
    """Seconds spent per step of a trusted stage (inputs, reference, oracle, waiting for the candidate, comparing),
    reported to the grader so a grading shows where its time went."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.monotonic() - started


@dataclass
class Expected:
    """What the judge keeps of one case: the reference's output (and oracle), the inputs where the problem's
    compare() hook reads them, the CPU inputs for republishing; or why the reference failed."""

    expected: Any = None
    inputs: list | None = None
    cpu_inputs: list | None = None
    oracle: Any = None
    oracle_status: str = ""
    reference_error: str | None = None


@dataclass
class Judge:
    """A trusted stage's state: the context, the comparison, the clock, and the cases republished so far."""

    ctx: StageContext
    comparer: Comparer
    clock: StageClock = field(default_factory=StageClock)
    republished: list[str] = field(default_factory=list)
    oracle_everywhere: bool = False   # a Kahan problem's row-sum evidence needs an oracle on every case
    repeated: set[str] = field(default_factory=set)       # cases a later repeat case calls again
    first_outputs: dict[str, list] = field(default_factory=dict)  # their outputs, on the host, until the repeat
    first_inputs: dict[str, str] = field(default_factory=dict)    # and a digest of the inputs they were given

    @classmethod
    def open(cls, ctx: StageContext, oracle_everywhere: bool) -> Judge:
        return cls(ctx, Comparer.for_job(ctx.torch, ctx.reference, ctx.job), oracle_everywhere=oracle_everywhere)


def publish_inputs(path: Path, inputs: list) -> None:
    """Tensors into one file (`path`), the argument layout (tensor index or literal value) beside it; layout
    first, since the candidate waits for the tensor file."""
    import torch

    tensors: list[torch.Tensor] = []
    arguments: list[int | LiteralArgument] = []
    for item in inputs:
        if isinstance(item, torch.Tensor):
            arguments.append(len(tensors))
            tensors.append(item)
        else:
            arguments.append(LiteralArgument(value=item))
    path.parent.mkdir(parents=True, exist_ok=True)
    layout_path(path).write_text(InputLayout(arguments=arguments).model_dump_json())
    save_tensors(path, tensors, single=False)


def to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    return value


def compute_oracle(judge: Judge, model, inputs: list) -> tuple[Any, str]:
    """fp64 result for the error-size detector: the reference's oracle() hook, else the model in double."""
    torch = judge.ctx.torch
    try:
        with torch.no_grad():
            hook = getattr(judge.ctx.reference, "oracle", None)
            if hook is not None:
                return hook(model, *inputs), "ok"
            wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
            return copy.deepcopy(model).double()(*wide), "ok"
    except Exception as exc:  # the verdict then says why no error size was measured
        return None, f"unavailable: {type(exc).__name__}: {str(exc)[:300]}"


class InputPrefetcher:
    """Draws upcoming cases' inputs on the CPU in worker threads (torch releases the GIL inside its ops), a few
    cases ahead of the reference: on big shapes the CPU generator, not the GPU, is what grading waits for.

    docs/grading.md, contract 2: a reference draws its inputs on the CPU and then moves them, so drawing with
    device="cpu" gives the same values; the judge moves them itself after publishing them (no device-to-host copy
    back). A reference that draws from torch's global generator and module globals (another benchmark's layout,
    THREAD_SAFE_INPUTS false) is drawn on this thread, each case when it is taken: a draw beside the reference's
    model construction would change the weights it draws."""

    def __init__(self, reference, cases: list[Case], ahead: int, device="cpu", generators: dict | None = None):
        from concurrent.futures import ThreadPoolExecutor

        from kernelbench.problems.loader import inputs_device, inputs_thread_safe

        self.reference, self.cases, self.generators = reference, cases, generators or {}
        self.draw_on = inputs_device(reference, device)
        self.ahead = max(1, ahead) if inputs_thread_safe(reference) else 0
        self.pool = ThreadPoolExecutor(max_workers=self.ahead, thread_name_prefix="inputs") if self.ahead else None
        self.futures: dict[int, Any] = {}
        for i in range(min(self.ahead, len(cases))):
            self._submit(i)

    def _draw(self, i: int) -> list:
        """The case's inputs on the host, where they are published from (drawn on the device where the reference
        draws there: a 2 GiB draw is then copied in a second instead of drawn in tens)."""
        c = self.cases[i]
        if c.generator:  # a held-out property: its function in heldout.py draws inputs of its structure
            drawn = draw_property(self.generators, self.reference, c, self.draw_on)
        else:
            drawn = self.reference.get_inputs(c.shape, c.seed, self.draw_on, case=c.case, scale=c.scale)
        return drawn if self.draw_on == "cpu" else [to_device(x, "cpu") for x in drawn]

    def _submit(self, i: int) -> None:
        assert self.pool is not None  # drawing ahead (self.ahead > 0) is what makes the pool
        self.futures[i] = self.pool.submit(self._draw, i)

    def take(self, i: int) -> list:
        if self.pool is None:
            return self._draw(i)
        if i + self.ahead < len(self.cases):
            self._submit(i + self.ahead)
        return self.futures.pop(i).result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def draw_property(generators: dict, reference, case: Case, device: str) -> list:
    """A held-out property case's inputs: heldout.py's function of that name, from the case's seed alone."""
    if case.generator not in generators:
        raise KeyError(f"heldout.py defines no function {case.generator}() for the property of that name")
    return generators[case.generator](reference, dict(case.shape), case.seed, device)


def property_generators(job: JudgeJob) -> dict:
    """heldout.py's functions, where the job holds a held-out property case (the file is trusted problem code)."""
    if not any(c.generator for c in job.cases):
        return {}
    from kernelbench.problems.heldout import load_generators

    return load_generators(Path(job.problem_dir))


def prefetch_depth() -> int:
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def prepare_case(judge: Judge, model, case: Case, keep_inputs: bool, cpu_inputs: list) -> Expected:
    """Publish the case's inputs, run the reference; expected values (and the oracle) stay on the device."""
    ctx, job = judge.ctx, judge.ctx.job
    torch = ctx.torch
    with judge.clock.step("publish_inputs"):
        publish_inputs(job.input_path(case.id), cpu_inputs)
    with judge.clock.step("reference"):
        inputs = [x.to(ctx.device) if isinstance(x, torch.Tensor) else x for x in cpu_inputs]
        with torch.no_grad():
            expected = model(*inputs)
        if isinstance(job, JudgeJob) and job.save_expected:
            items = [expected] if isinstance(expected, torch.Tensor) else list(expected)
            save_tensors(Path(job.out_dir) / f"expected_{case.id}.kbt", items,
                         single=isinstance(expected, torch.Tensor))
    kept = Expected(expected=expected, inputs=inputs if keep_inputs else None, cpu_inputs=cpu_inputs)
    add_oracle(judge, model, case, inputs, kept)
    return kept


def add_oracle(judge: Judge, model, case: Case, inputs: list, kept: Expected) -> None:
    """The fp64 oracle, for the cases that get one: the error-size detector's, and every case of a Kahan problem
    (its row-sum evidence needs one)."""
    if case.oracle or judge.oracle_everywhere:
        with judge.clock.step("oracle"):
            kept.oracle, kept.oracle_status = compute_oracle(judge, model, inputs)


def run_judge(ctx: StageContext) -> JudgeReply:
    """Case by case: publish and run the reference for one case, then judge the case before it, so at most two
    cases' tensors are alive and the candidate always has its next inputs while the previous output is compared."""
    job = ctx.job
    assert isinstance(job, JudgeJob)
    judge = Judge.open(ctx, oracle_everywhere=job.kahan and job.check_dir is not None)
    judge.repeated = {c.repeat_of for c in job.cases if c.repeat_of}
    keep_inputs = callable(getattr(ctx.reference, "compare", None)) or bool(ctx.job.index_outputs)
    verdicts: dict[str, CaseVerdict] = {}
    pending: tuple[Case, Expected] | None = None
    model, model_shape = None, None
    prefetch = InputPrefetcher(ctx.reference, job.cases, prefetch_depth(), ctx.device, property_generators(job))
    for i, case in enumerate(job.cases):
        try:
            with judge.clock.step("inputs"):
                cpu_inputs = prefetch.take(i)
            if model_shape != case.shape_index:
                model, model_shape = None, None
                with judge.clock.step("reference"):
                    model, model_shape = ctx.build_model(case.shape_index, case.shape), case.shape_index
            kept = prepare_case(judge, model, case, keep_inputs, cpu_inputs)
        except Exception as exc:  # the problem's own code failed: reported as its error, never the candidate's
            kept = Expected(reference_error=describe(exc))
        if pending is not None:
            verdicts[pending[0].id] = settle_case(judge, *pending)
            tell_progress(job, len(verdicts))
        pending = (case, kept)
    if pending is not None:
        verdicts[pending[0].id] = settle_case(judge, *pending)
        tell_progress(job, len(verdicts))
    prefetch.close()
    return JudgeReply(cases=verdicts, clock=judge.clock.totals, republished=judge.republished,
                      device_info=device_info(ctx.torch, ctx.device))


def tell_progress(job: JudgeJob, judged: int) -> None:
    """How many cases the judge has settled, for the grader's progress display (PROGRESS_FILE in the judge's own
    out folder, replaced whole); nothing is decided from it."""
    path = Path(job.out_dir) / PROGRESS_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(f"{judged} {len(job.cases)}\n")
    os.replace(partial, path)


def settle_case(judge: Judge, case: Case, kept: Expected) -> CaseVerdict:
    """Judge one case (when a candidate runs beside the judge) and free what the later stages do not need."""
    job = judge.ctx.job
    assert isinstance(job, JudgeJob)
    if job.check_dir is None:
        return CaseVerdict(reference_error=kept.reference_error, prepared=kept.reference_error is None)
    verdict = judge_case(judge, case, kept)
    if case.id not in set(job.keep_ids):  # only the timed cases' files are read again
        check_dir = Path(job.check_dir)
        for path in (job.input_path(case.id), layout_path(job.input_path(case.id)),
                     check_dir / f"out_{case.id}.kbt", check_dir / f"end_{case.id}"):
            path.unlink(missing_ok=True)
    return verdict


def wait_for_output(judge: Judge, case_id: str, inputs: list | None = None) -> Path | None:
    """Wait for the candidate's output; inputs deleted before the candidate wrote it are published again
    (a candidate deleting grading files would otherwise wait for its inputs until the stage limit)."""
    job = judge.ctx.job
    assert isinstance(job, JudgeJob) and job.check_dir is not None
    check_dir = Path(job.check_dir)
    path = check_dir / f"out_{case_id}.kbt"
    ended = check_dir / f"end_{case_id}"  # the check stage's end-of-case marker (worker.check.end_marker)
    # the check stage runs the cases in order: a later case's marker means this one is over, whatever the
    # candidate did to its own files (it may delete this case's marker and output from its out folder)
    later = [check_dir / f"end_{c.id}" for c in following_cases(job, case_id)]
    while not path.is_file():
        if (check_dir / DONE_MARKER).is_file() or ended.is_file() or any(p.is_file() for p in later):
            return path if path.is_file() else None
        if inputs is not None and not job.input_path(case_id).is_file():
            if judge.republished.count(case_id) >= MAX_REPUBLISH:
                return None
            judge.republished.append(case_id)
            publish_inputs(job.input_path(case_id), inputs)
        time.sleep(POLL_S)
    return path


def following_cases(job: JudgeJob, case_id: str) -> list[Case]:
    ids = [c.id for c in job.cases]
    return job.cases[ids.index(case_id) + 1:] if case_id in ids else []


def judge_case(judge: Judge, case: Case, kept: Expected) -> CaseVerdict:
    if kept.reference_error is not None:
        return CaseVerdict(reference_error=kept.reference_error)
    with judge.clock.step("wait_candidate"):
        path = wait_for_output(judge, case.id, kept.cpu_inputs)
    if path is None:
        return CaseVerdict(missing=True)
    try:
        with judge.clock.step("compare"):
            verdict = judge_output(judge, case.id, case.oracle, path, kept, judge.comparer.tolerance_of(case))
            verdict.repeat = against_first_call(judge, case, path, kept.cpu_inputs or [])
            return verdict
    except GuardFailed as exc:
        return CaseVerdict(guard_error=str(exc))
    except Exception as exc:  # the candidate's file: whatever it holds, it could not be compared
        return CaseVerdict(messages=[f"the candidate's output could not be compared: {describe(exc)}"])


def judge_output(judge: Judge, case_id: str, oracle_case: bool, path: Path, kept: Expected,
                 tolerance: dict[str, dict[str, float]] | None = None) -> CaseVerdict:
    """One saved output judged; `tolerance`: the case's (Comparer.tolerance_of), else the problem's."""
    torch, job = judge.ctx.torch, judge.ctx.job
    device = "cuda" if job.device == "cuda" and torch.cuda.is_available() else "cpu"
    # a file later stages read again is digested as read: a rewrite after this judgement shows (stages.audits)
    reread = isinstance(job, JudgeJob) and case_id in job.keep_ids
    tensors, header, digest = load_tensors_digested(path, device) if reread else (*load_tensors(path, device), None)
    out = tensors[0] if header.single else tuple(tensors)
    expected = to_device(kept.expected, device)
    result, kahan = judge.comparer.judge(case_id, out, expected, to_device(kept.inputs, device), kept.oracle,
                                         header.tensors, tolerance)
    verdict = CaseVerdict(passed=result.ok, messages=result.messages, max_abs_err=result.max_abs_err,
                          max_rel_err=result.max_rel_err, worst_index=result.worst_index, integrity=kahan,
                          output_digest=digest)
    if result.ok and oracle_case and kept.oracle is not None:
        verdict.error_size = error_sizes(out, expected, to_device(kept.oracle, device), judge.comparer.selections)
    elif oracle_case:
        verdict.error_size_status = kept.oracle_status
    return verdict


def against_first_call(judge: Judge, case: Case, path: Path, cpu_inputs: list) -> list[RepeatDifference]:
    """A case a repeat calls again keeps its output (on the host) until then; the repeat's output is compared with
    it bit for bit. Bits, not values: a NaN where the first call had one is the same, a -0.0 for 0.0 is not. Only
    where the reference drew the same inputs both times (a problem whose draw does not replay from its seed
    would otherwise show a difference no kernel made)."""
    if case.id not in judge.repeated and not case.repeat_of:
        return []
    tensors, _ = load_tensors(path, "cpu")
    if case.id in judge.repeated:
        judge.first_outputs[case.id] = tensors
        judge.first_inputs[case.id] = inputs_digest(cpu_inputs)
    first = judge.first_outputs.pop(case.repeat_of, None) if case.repeat_of else None
    drawn = judge.first_inputs.pop(case.repeat_of, None) if case.repeat_of else None
    if first is None or drawn != inputs_digest(cpu_inputs):
        return []
    return [d for i, (a, b) in enumerate(zip(first, tensors)) if (d := bitwise_difference(case.repeat_of, i, a, b))]


def inputs_digest(inputs: list, sample: int = 65536) -> str:
    """Types, shapes and a strided sample of every input's bytes: enough to tell a draw that did not replay (it
    differs almost everywhere) without hashing gigabytes; the inputs come from the trusted reference."""
    import torch

    digest = hashlib.sha256()
    for x in inputs:
        if isinstance(x, torch.Tensor):
            flat = x.detach().contiguous().flatten()
            step = max(1, flat.numel() // sample)
            digest.update(f"{x.dtype}{tuple(x.shape)}".encode())
            digest.update(flat[::step].contiguous().view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(x).encode())
    return digest.hexdigest()


def bitwise_difference(of: str, output: int, first, again) -> RepeatDifference | None:
    """None when the two tensors hold the same bits; else how many elements differ, by how much, and where."""
    import torch

    if first.dtype != again.dtype or first.shape != again.shape:
        return RepeatDifference(of=of, output=output, differing=max(first.numel(), again.numel()),
                                total=max(first.numel(), again.numel()))
    a, b = first.contiguous().flatten(), again.contiguous().flatten()
    if a.numel() == 0 or torch.equal(a.view(torch.uint8), b.view(torch.uint8)):
        return None
    width = a.element_size()
    differs = (a.view(torch.uint8).view(-1, width) != b.view(torch.uint8).view(-1, width)).any(dim=1)
    diff = None
    worst = int(differs.nonzero()[0].item())
    if a.dtype != torch.bool and not a.is_complex():
        gap = (a.double() - b.double()).abs()
        gap = torch.where(differs, gap, torch.zeros_like(gap))
        if torch.isfinite(gap).all():
            worst = int(gap.argmax().item())
            diff = float(gap[worst].item())
    index = [int(x) for x in torch.unravel_index(torch.tensor(worst), tuple(first.shape))] if first.dim() else []
    return RepeatDifference(of=of, output=output, differing=int(differs.sum().item()), total=a.numel(),
                            max_abs_diff=diff, worst_index=index)
