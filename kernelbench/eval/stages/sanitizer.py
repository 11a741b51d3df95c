"""The sanitizer stage (docs/grading.md, "Sanitizer"): NVIDIA compute-sanitizer's memcheck and racecheck over one
call of the candidate on the published shape of least work, after the checks passed, on CUDA gradings.

A correct output does not prove a kernel correct: a read one element past a tensor, or a shared-memory race,
gives the right answer on most runs and the wrong one on another GPU, driver or input. The tools see both on one
call. Each runs the probe (kernelbench.eval.integrity.sanitizer_probe) in the candidate's confinement (the probe
imports the candidate, which gets no more here than in its other stages), the tool and the probe killed as a group
at the stage's limit, which every run of the stage shares.

Which reports fail a grading: library kernels (PyTorch's, cuBLAS's) may report too, and the candidate is not to
blame for what the reference's own call also sets off. So where the candidate's run reported an error, the
reference's call runs under the same tool on the same inputs, and a report counts against the candidate only in
a kernel (by name) the reference's run did not report. Racecheck's warnings (hazards that are safe under
warp-synchronous execution) are recorded, never a failure. A tool that is missing, runs out of time, or ends
without its summary and without a report is recorded as not run, never as a failure and never as a clean bill.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernelbench.base.models import SanitizerFinding, SanitizerResult, SanitizerRun
from kernelbench.eval.cases import Case
from kernelbench.eval.grading import GradingPlan, GradingState
from kernelbench.eval.integrity import sanitizer_output
from kernelbench.eval.integrity.sanitizer_probe import SanitizerJob, SanitizerStatus, read_status
from kernelbench.eval.protocol import read_tensor_header

STAGE = "sanitizer"
TOOLS: tuple[sanitizer_output.Tool, ...] = ("memcheck", "racecheck")
DEVICES = ("cuda",)                 # where the stage runs (tests add "cpu" to drive it with a stand-in tool)
TOOL_ENV = "KERNELBENCH_COMPUTE_SANITIZER"  # path of the compute-sanitizer to use
DEFAULT_PATHS = ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer")
ERROR_EXIT = 86                     # --error-exitcode: the tool's "errors found", told apart from a crash
PRINT_LIMIT = 50                    # reports printed per run: enough to name every kernel, bounded output
# memcheck sees an access outside every allocation, not one that lands in the next: the tensors of a call are
# often adjacent (a 32 MiB input and its output, each a multiple of the driver's granularity), so a read one
# element past the input lands in the output; a padding buffer after every allocation puts it out of bounds
PADDING_BYTES = 4096
TURNED_OFF = "not run: turned off for this grading by its caller (--sanitizer off)"
CUDA_ONLY = "not run: cuda only (compute-sanitizer checks CUDA kernels)"
NOT_CORRECT = "not run: the solution failed its checks"


def check(plan: GradingPlan, state: GradingState, correct: bool,
          announce: Callable[[str, str], None] | None = None) -> bool:
    """Record the stage's result in `state.grading.sanitizer`; True when it fails the candidate (an error report
    in a kernel of its own), with the reason added to the grading's. `announce` is told the stage's name and what
    it will do, where the checks passed (the stages after it are announced only then too)."""
    if correct and announce is not None:
        announce("sanitizer", detail(plan))
    if plan.options.line != "candidate":  # the deck's own lines are baselines, not entrants
        return False
    note = skip_reason(plan, correct)
    if note:
        state.grading.sanitizer = SanitizerResult(note=note)
        return False
    started = time.monotonic()
    try:
        result = sanitize(plan, state)
    finally:
        state.clock(STAGE, started)
    result.seconds = round(time.monotonic() - started, 3)
    state.grading.sanitizer = result
    for line in log_lines(result):
        state.log.check.append(line)
    if result.passed is False:
        state.grading.reasons.append(reason(result))
        return True
    return False


def skip_reason(plan: GradingPlan, correct: bool) -> str:
    if not plan.options.sanitizer:
        return TURNED_OFF
    if plan.device not in DEVICES:
        return CUDA_ONLY
    if not correct:
        return NOT_CORRECT
    return ""


def detail(plan: GradingPlan) -> str:
    """What the stage will do, for progress."""
    if plan.options.line != "candidate":
        return "not run for the deck's own lines"
    return skip_reason(plan, True).removeprefix("not run: ") or "memcheck and racecheck"


def kept_cases(plan: GradingPlan) -> list[Case]:
    """The cases whose inputs the stage may use (one base case per published shape), for the correctness stage
    to keep once judged; none where the stage will not run."""
    if plan.options.line != "candidate" or not plan.options.sanitizer or plan.device not in DEVICES:
        return []
    first: dict[int, Case] = {}
    for case in plan.cases:
        if case.label == "base" and case.shape_index < len(plan.shapes):
            first.setdefault(case.shape_index, case)
    return [first[i] for i in sorted(first)]


def smallest_case(plan: GradingPlan) -> Case | None:
    """The kept case of the least work: by the problem's own FLOP and byte formulas where it states them, then by
    the elements its inputs hold (read from the judge's input files' headers). Inputs alone can mislead: 06's
    Mixtral shape takes as many input elements as its smallest shape and 14x its work in the weights, and racecheck's
    time grows with the work it instruments (more than 450 s there on an H100)."""
    sized = []
    for case in kept_cases(plan):
        elements = input_elements(plan.workdir / "inputs" / f"in_{case.id}.kbt")
        if elements is not None:
            sized.append((*work_of(plan, case.shape_index), elements, case.shape_index, case))
    return min(sized, key=lambda s: s[:4])[4] if sized else None


def work_of(plan: GradingPlan, shape_index: int) -> tuple[float, float]:
    """(FLOPs, bytes) of a published shape by the problem's formulas; 0 for a formula the problem lacks or that
    cannot be evaluated on the shape (the input elements then decide)."""
    shape = plan.shapes[shape_index]
    work = []
    for formula in (plan.spec.flops_of, plan.spec.bytes_of):
        try:
            value = formula(shape)
        except (ValueError, KeyError, ZeroDivisionError, TypeError):
            value = None
        work.append(value if value is not None else 0.0)
    return work[0], work[1]


def input_elements(path: Path) -> int | None:
    try:
        header = read_tensor_header(path)
    except (OSError, ValueError):
        return None
    total = 0
    for info in header.tensors:
        count = 1
        for size in info.shape:
            count *= size
        total += count
    return total


def find_tool() -> str | None:
    configured = os.environ.get(TOOL_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("compute-sanitizer") or next((p for p in DEFAULT_PATHS if os.access(p, os.X_OK)), None)


def sanitize(plan: GradingPlan, state: GradingState) -> SanitizerResult:
    from kernelbench.eval.stages.audits import graded_copy

    limit = plan.options.limit(STAGE)
    tool = find_tool()
    if tool is None:
        where = os.environ.get(TOOL_ENV) or "compute-sanitizer on PATH or under /usr/local/cuda"
        return SanitizerResult(note=f"not run: compute-sanitizer not found ({where})", limit_s=limit)
    case = smallest_case(plan)
    if case is None:
        return SanitizerResult(note="not run: no judged inputs were kept for it", limit_s=limit)
    graded_copy(plan, state)  # the solution every stage imports is the one the lint read
    result = SanitizerResult(shape_index=case.shape_index, shape=case.shape, case=case.id, limit_s=limit)
    deadline = time.monotonic() + limit
    for name in TOOLS:
        result.runs.append(tool_run(plan, tool, name, case, deadline))
    result.passed = verdict_of(result.runs)
    return result


def tool_run(plan: GradingPlan, tool: str, name: sanitizer_output.Tool, case: Case, deadline: float) -> SanitizerRun:
    """One tool over the candidate's call and, where that reported an error, over the reference's."""
    theirs = run_probe(plan, tool, name, case, "candidate", deadline)
    run = SanitizerRun(tool=name, seconds=round(theirs.seconds, 3), exit_code=theirs.returncode)
    if theirs.why:
        run.note = f"not run: {theirs.why}"
        return run
    if not any(r.severity == "error" for r in theirs.output.reports):  # warnings never fail: no comparison
        run.ran = True
        run.findings = merge(theirs.output.reports, None)
        return run
    ours = run_probe(plan, tool, name, case, "reference", deadline)
    run.reference_seconds = round(ours.seconds, 3)
    if ours.why:  # the reports cannot be told apart from the libraries': recorded, not decided
        run.findings = merge(theirs.output.reports, None)
        run.note = f"not run: the reference's run, needed to tell library reports apart, failed: {ours.why}"
        return run
    run.ran = True
    run.findings = merge(theirs.output.reports, {r.kernel for r in ours.output.reports})
    return run


def verdict_of(runs: list[SanitizerRun]) -> bool | None:
    if any(f.fails for r in runs if r.ran for f in r.findings):
        return False
    return True if runs and all(r.ran for r in runs) else None


def merge(reports: list[sanitizer_output.Report], reference: set[str] | None) -> list[SanitizerFinding]:
    """One finding per (kernel, kind, severity), in first-seen order, with the first report's lines."""
    merged: dict[tuple[str, str, str], SanitizerFinding] = {}
    for r in reports:
        key = (r.kernel, r.kind, r.severity)
        if key in merged:
            merged[key].count += 1
            continue
        merged[key] = SanitizerFinding(tool=r.tool, kernel=r.kernel, kind=r.kind, severity=r.severity,
                                       evidence=r.lines, in_reference=None if reference is None
                                       else r.kernel in reference)
    return list(merged.values())


@dataclass
class ProbeRun:
    output: sanitizer_output.ToolOutput
    seconds: float = 0.0
    returncode: int | None = None
    why: str = ""                        # why the run decides nothing ("": it decides)


def run_probe(plan: GradingPlan, tool: str, name: sanitizer_output.Tool, case: Case,
              line: Literal["candidate", "reference"], deadline: float) -> ProbeRun:
    """The probe under one tool, confined as the candidate's stages are, killed as a group at the deadline."""
    folder = plan.workdir / f"{STAGE}_{name}_{line}"
    folder.mkdir(parents=True, exist_ok=True)
    job = SanitizerJob(problem_dir=str(plan.pristine), module=str(plan.module), line=line, device=plan.device,
                       shape=case.shape, model_seed=plan.model_seeds()[case.shape_index],
                       input_path=str(plan.workdir / "inputs" / f"in_{case.id}.kbt"),
                       status_path=str(folder / "status.json"))
    job_path = folder / "job.json"
    job_path.write_text(job.model_dump_json())
    remaining = deadline - time.monotonic()
    if remaining <= 1:
        return ProbeRun(sanitizer_output.ToolOutput(name), why="the stage's time limit was spent")
    started = time.monotonic()
    code, text, timed_out = run_confined(plan, tool_command(tool, name, job_path), folder, remaining)
    seconds = time.monotonic() - started
    output = sanitizer_output.parse(name, text)
    probe = ProbeRun(output, seconds, code)
    probe.why = not_run_reason(name, output, code, timed_out, remaining, probe_status(folder), text)
    return probe


def tool_command(tool: str, name: str, job_path: Path) -> list[str]:
    """compute-sanitizer's options: the tool; its exit status when it found errors; how many reports it prints;
    no reports of CUDA API calls that returned an error (libraries probe the driver and handle the answer: those
    are not memory errors); for memcheck, a padding buffer after every allocation where the tool offers one."""
    padding = ["--padding", str(PADDING_BYTES)] if name == "memcheck" and offers_padding(tool) else []
    return [tool, "--tool", name, "--error-exitcode", str(ERROR_EXIT), "--print-limit", str(PRINT_LIMIT),
            "--report-api-errors", "no", *padding,
            sys.executable, "-P", "-m", "kernelbench.eval.integrity.sanitizer_probe", str(job_path)]


@functools.cache
def offers_padding(tool: str) -> bool:
    """Whether this compute-sanitizer takes --padding (asked once per tool: its --help lists its options)."""
    try:
        proc = subprocess.run([tool, "--help"], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--padding" in proc.stdout


def not_run_reason(name: str, output: sanitizer_output.ToolOutput, code: int | None, timed_out: bool,
                   limit: float, status: SanitizerStatus | None, text: str) -> str:
    """Why the run decides nothing, or "" where it does: a report is evidence however the run ended; without one,
    only a run that finished (the tool's summary, its own exit status) and made the call is a clean bill."""
    if any(r.severity == "error" for r in output.reports):
        return ""
    if timed_out:
        return f"{name} did not finish in the stage's {limit:.0f} s left"
    if not output.finished or code not in (0, ERROR_EXIT):
        return f"{name} ended (exit status {code}) without its summary: {tail(text)}"
    if status is None or not status.called:
        what = (status.error.strip().splitlines()[0] if status is not None and status.error
                else f"it stopped at its {status.stage if status else 'setup'} step")
        return f"the call did not complete under {name}: {what[:300]}"
    return ""


def probe_status(folder: Path) -> SanitizerStatus | None:
    try:
        return read_status(folder / "status.json")
    except (OSError, ValueError):
        return None


def tail(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (" | ".join(lines[-4:]) or "no output")[:500]


def run_confined(plan: GradingPlan, cmd: list[str], folder: Path, limit_s: float) -> tuple[int | None, str, bool]:
    """(exit status, output head and tail, timed out) of `cmd` run in the grading's sandbox (where it has one),
    from the grading folder as every candidate stage is, `folder` the only grading folder it may write beside the
    candidate's shared ones."""
    from kernelbench import confinement
    from kernelbench.eval.isolation import SOLUTION_FOLDER, sandboxed
    from kernelbench.eval.process import BoundedReader, child_limits, kill_group, worker_env

    env = {**worker_env(plan.device), **plan.build_env}
    command = None
    pass_fds: tuple[int, ...] = ()
    if plan.isolation.sandboxed:
        assert plan.isolation.bwrap is not None  # what sandboxed means
        command = sandboxed(cmd, plan.isolation.bwrap, workdir=plan.workdir, device=plan.device, env=env,
                            writable=(folder,), readable=(Path(os.path.realpath(cmd[0])).parent,),
                            addable=(plan.workdir / SOLUTION_FOLDER,))
        cmd, env, pass_fds = command.argv, command.env, command.pass_fds
    try:
        proc = subprocess.Popen(cmd, cwd=plan.workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=confinement.apply_limits if command is not None else child_limits)
    finally:
        if command is not None:
            command.close()
    reader = BoundedReader(proc.stdout)
    reader.start()
    try:
        code: int | None = proc.wait(timeout=limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        code, timed_out = None, True
    kill_group(proc)
    reader.join(timeout=5)
    return code, reader.text(), timed_out


def reason(result: SanitizerResult) -> str:
    """The grading's reason line: the tool, the kernel and the first report against the candidate."""
    failing = [(r.tool, f) for r in result.runs for f in r.findings if f.fails]
    tool, first = failing[0]
    return (f"sanitizer: {len(failing)} compute-sanitizer finding(s) in kernels the reference's run does not "
            f"report, on shape {result.shape_index} {result.shape}; first: {tool} in {first.kernel[:200]}: "
            f"{first.kind} ({first.count} report(s))")[:1000]


def log_lines(result: SanitizerResult) -> list[str]:
    lines = []
    for run in result.runs:
        state = run.note or (f"{len(run.findings)} finding(s)" if run.findings else "clean")
        lines.append(f"[sanitizer] {run.tool}: {state} ({run.seconds:.1f} s"
                     + (f", reference {run.reference_seconds:.1f} s" if run.reference_seconds is not None else "")
                     + ")")
        for f in run.findings:
            where = "also in the reference's run" if f.in_reference else (
                "not compared" if f.in_reference is None else "the candidate's own")
            lines.append(f"    {f.severity} {f.kind} in {f.kernel[:160]} x{f.count} ({where})")
    return lines or [f"[sanitizer] {result.note}"]
