"""Hardware-counter check: the kernels of a timed call must read at least the bytes the problem has to read.

One Nsight Compute (`ncu`) pass per CUDA grading, in its own process and under its own time limit, after the
checks have passed. The probe (`counter_probe`) builds the candidate as the bench stage does, makes the warm-up
calls the timed loop makes over the grading's own timing inputs, then makes one more call, on an input set it
has already seen, inside an NVTX range. ncu profiles the kernels of that range only, each with a cold L2
(`--cache-control all`), and reports `dram__bytes_read.sum` / `dram__bytes_write.sum` per kernel, with each
kernel's `gpu__time_duration.sum` (the finding's evidence gives their sum, to set beside the shape's timed median).

The rule (first touch): the inputs arrive in device memory before the call and every byte the problem must read
has to reach an SM at least once; with the L2 flushed before each kernel, the first touch of a byte is a DRAM
read. So an honest call's kernels read at least the bytes the problem must read, whatever the algorithm (a
multi-pass kernel reads more, never less). Reads below that floor mean the call skipped part of its input
(sub-sampling), returned an answer it had kept (memoisation), or did the work somewhere the GPU's kernels do not
see (the host). The bytes the problem must read are its roofline `bytes` formula less the bytes of the outputs
(which the formula counts as writes): the same minimum the speed-of-light gate stands on; for paged attention it
counts the pages the block table references, not the whole pool.

The converse does not hold: a sub-sampler whose passes re-read more than it skipped stays above the floor. The
smallest full shape is probed, where the inputs fit in L2 and a kernel's own re-reads mostly hit it, which keeps
such a cheat nearer its true footprint (and the pass short). When ncu is missing, counters are not permitted
(ERR_NVGPUCTRPERM) or the pass runs out of time, the check says so in an info finding with the error seen.
DRAM counters are device-wide: passes take turns through a lock file, and other work on the GPU can only add
bytes (a weaker check under load, never a false alarm).
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding
from kernelbench.eval.integrity.counter_probe import NVTX_RANGE, ProbeJob, ProbeStatus, read_status
from kernelbench.eval.protocol import read_tensor_header

CHECK = "dram_bytes"
PROFILED_CHECK = "profiled_output"
PROBE_OUTPUT = "probe_out.kbt"     # the measured call's output, written by the probe once the range is closed
PROFILED_WRONG = ("the call the hardware-counter pass measured returned another output than the one the checks "
                  "passed for the same inputs: the solution computes something else under a profiler, so the "
                  "kernels ncu listed are not the ones that do its work")
PROFILED_MISSING = ("the call the hardware-counter pass measured left no output to judge (it returned something "
                    "other than tensors, or its output file was removed)")
OUTPUT_MATCHED = "the measured call's output matched its checked output"
PROFILED_TIME_CHECK = "profiled_time"
# the measured call's kernels under ncu against the shape's timed median: on one H100, honest kernels of the deck
# measured 0.16-1.02 (benchmarks/results/h100_honest_full_1207b.md), the red-team case that shows ncu slow allowed
# kernels 2.96 (benchmarks/results/h100_profiled_time_1207c.md), which a lead at three times let through; at two
# times honest kernels keep twice their largest ratio. ncu flushes L2 before each kernel and a call of many short
# kernels may take longer there than those measured, hence a lead, never a verdict
PROFILED_TIME_RATIO = 2.0
SENTINEL = "spin_kernel"  # torch.cuda._sleep's kernel, launched first inside the range: proof the range was seen
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# each kernel's duration under ncu (cold L2, serialised, clocks as they are): recorded beside the bytes, so a
# reader can set the measured call's kernel time against the timed median of the same shape
DURATION = "gpu__time_duration.sum"
# every byte the problem must read is read at least once; the 3% spare covers index tensors (block tables,
# offsets) an honest call may read on the host with a copy instead of in a kernel (under 0.1% in the deck)
MIN_READ_FRACTION = 0.97
DEVICES = ("cuda",)          # where the pass runs (tests add "cpu" to drive it with a stand-in ncu)
IMPORT_LIMIT_S = 30.0        # reading the report back: trusted, no candidate code
LOCK_WAIT_S = 180.0          # counters are one per GPU: concurrent gradings take turns
NCU_ENV = "KERNELBENCH_NCU"  # path of the ncu to use (default: ncu on PATH, then /usr/local/cuda/bin/ncu)
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "complex64": 8,
               "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
               "float8_e8m0fnu": 1}


@dataclass
class CounterReading:
    read_bytes: float = 0.0
    write_bytes: float = 0.0
    kernels: list[str] = field(default_factory=list)  # the call's kernels (the sentinel left out)
    kernel_ns: float | None = None  # their summed durations under ncu (None: not in the report)
    sentinel: bool = False       # the range was seen: a call with no kernel really launched none
    status: ProbeStatus | None = None  # what the probe wrote (None: nothing, it never started)
    skipped: str = ""            # why nothing could be measured (ncu missing, no permission, out of time)
    log: str = ""                # ncu's own messages (never the candidate's output)
    seconds: float = 0.0


@dataclass
class Requirement:
    shape_index: int
    shape: dict[str, Any]
    formula_bytes: float         # the problem's `bytes` formula on this shape
    output_bytes: int            # of the checked outputs (written, not read)

    @property
    def must_read(self) -> float:
        return self.formula_bytes - self.output_bytes


# ------------------------------------------------------------------------------------------------- what to read

def output_bytes(kbt_path: Path) -> int | None:
    """Bytes of the tensors in a grading tensor file, from its header alone."""
    try:
        header = read_tensor_header(kbt_path)
    except ValueError:  # not a tensor file, or a header that does not validate
        return None
    total = 0
    for info in header.tensors:
        if info.dtype not in DTYPE_BYTES:
            return None
        count = 1
        for size in info.shape:
            count *= size
        total += count * DTYPE_BYTES[info.dtype]
    return total


def probe_shape(spec, shapes: dict[int, dict[str, Any]]) -> int:
    """The shape with the fewest bytes: the cheapest pass, and the one whose inputs best fit in L2."""
    return min(shapes, key=lambda i: (spec.bytes_of(shapes[i]), i))


# ------------------------------------------------------------------------------------------------- running ncu

def find_ncu() -> str | None:
    configured = os.environ.get(NCU_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.access(p, os.X_OK)), None)


def ncu_command(ncu: str, job_path: Path, export: Path, log: Path) -> list[str]:
    return [ncu, "--target-processes", "application-only", "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
            "--metrics", ",".join((*METRICS, DURATION)), "--cache-control", "all", "--clock-control", "none",
            "--replay-mode", "kernel", "--export", str(export), "--force-overwrite", "--log-file", str(log),
            sys.executable, "-P", "-m", "kernelbench.eval.integrity.counter_probe", str(job_path)]


def import_command(ncu: str, report: Path) -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


class _GpuCounterLock:
    """One counter pass at a time per machine (ncu sessions on one GPU collide); waiting is not the pass's time."""

    def __init__(self, wait_s: float):
        self.wait_s = wait_s
        self.handle: TextIO | None = None

    def __enter__(self) -> bool:
        try:
            self.handle = open(Path(tempfile.gettempdir()) / "kernelbench-ncu.lock", "a")
        except OSError:  # another user's lock file: no turn-taking, the pass still runs
            return True
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            self.handle.close()  # closing releases the lock


def measure(job: ProbeJob, workdir: Path, env: dict[str, str], limit_s: float,
            cwd: Path | None = None, isolation: Any = None) -> CounterReading:
    """Run the probe under ncu (killed as a group at `limit_s`) and read the report back. `workdir` holds the
    pass's own files; `cwd` is where the probe runs: the grading folder, the working directory of every stage that
    runs the candidate, so a candidate that tells stages apart by what it sees around it cannot tell this one.
    With an `isolation` that sandboxes, ncu and the probe run confined in the grading's sandbox, `workdir` the
    only folder of the grading they may write beside the candidate's shared ones (kernelbench.eval.isolation):
    the probe imports the candidate, which must get no more here than in its check and bench stages."""
    ncu = find_ncu()
    if ncu is None:
        where = os.environ.get(NCU_ENV) or "ncu on PATH or /usr/local/cuda/bin/ncu"
        return CounterReading(skipped=f"ncu not found ({where})")
    workdir.mkdir(parents=True, exist_ok=True)
    job_path, export, log = workdir / "probe_job.json", workdir / "counters", workdir / "ncu.log"
    (workdir / PROBE_OUTPUT).unlink(missing_ok=True)
    job_path.write_text(job.model_copy(update={"status_path": str(workdir / "probe_status.json"),
                                               "output_path": str(workdir / PROBE_OUTPUT)}).model_dump_json())
    with _GpuCounterLock(LOCK_WAIT_S) as locked:
        if not locked:
            return CounterReading(skipped=f"another counter pass held the GPU's counters for {LOCK_WAIT_S:g} s")
        started = time.monotonic()
        timed_out = _run_group(ncu_command(ncu, job_path, export, log), cwd or workdir, env, limit_s,
                               isolation, workdir, job.device)
        reading = CounterReading(seconds=round(time.monotonic() - started, 2))
    reading.log = log.read_text(errors="replace") if log.is_file() else ""
    reading.status = _probe_status(workdir / "probe_status.json")
    if timed_out:
        reading.skipped = f"the counter pass did not finish in {limit_s:g} s (ncu replays each kernel of the call)"
        return reading
    report = next((p for p in (export.with_suffix(".ncu-rep"), export) if p.is_file()), None)
    if report is not None:  # ncu adds the .ncu-rep extension to the name it is given
        _read_report(reading, ncu, report)
    denied = next((line.strip() for line in reading.log.splitlines() if "ERR_NVGPUCTRPERM" in line), "")
    if denied and not reading.sentinel:  # a report that measured the range outranks any text in the log
        reading.skipped = f"counters not permitted on this machine: {denied[:400]}"
    return reading


def _run_group(cmd: list[str], cwd: Path, env: dict[str, str], limit_s: float, isolation: Any = None,
               writable: Path | None = None, device: str = "cuda") -> bool:
    """True when the limit passed first; the process group (ncu, the probe and its children) is killed."""
    from kernelbench import confinement
    from kernelbench.eval.isolation import SOLUTION_FOLDER, sandboxed
    from kernelbench.eval.process import child_limits

    command = None
    pass_fds: tuple[int, ...] = ()
    if isolation is not None and isolation.sandboxed:
        command = sandboxed(cmd, isolation.bwrap, workdir=cwd, device=device, env=env,
                            writable=(writable,) if writable is not None else (),
                            readable=(Path(os.path.realpath(cmd[0])).parent,),  # ncu's own folder
                            addable=(Path(cwd) / SOLUTION_FOLDER,))
        cmd, env, pass_fds = command.argv, command.env, command.pass_fds
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=confinement.apply_limits if command is not None else child_limits)
    finally:
        if command is not None:
            command.close()
    try:
        proc.wait(timeout=limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    return timed_out


def _probe_status(path: Path) -> ProbeStatus | None:
    """The probe's last status, or None where it wrote none (or something that is not a status)."""
    try:
        return read_status(path)
    except (OSError, ValueError):
        return None


def _read_report(reading: CounterReading, ncu: str, report: Path) -> None:
    try:
        proc = subprocess.run(import_command(ncu, report), check=False, capture_output=True, text=True,
                              timeout=IMPORT_LIMIT_S)
    except subprocess.TimeoutExpired:
        reading.log += f"\nreading the report back took over {IMPORT_LIMIT_S:g} s"
        return
    rows = parse_ncu_csv(proc.stdout)
    if not rows:  # kept for the finding's evidence: what the import said instead of a table
        reading.log += f"\nncu --import (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-400:]}"
    if rows and SENTINEL in rows[0].name:
        reading.sentinel = True
        rows = rows[1:]
    reading.kernels = [row.name for row in rows]
    reading.read_bytes = sum(row.read for row in rows)
    reading.write_bytes = sum(row.write for row in rows)
    times = [row.ns for row in rows]
    reading.kernel_ns = sum(t for t in times if t is not None) if rows and None not in times else None


class KernelRow(NamedTuple):
    name: str
    read: float          # DRAM bytes
    write: float
    ns: float | None = None  # duration under ncu, where the report has it


def parse_ncu_csv(text: str) -> list[KernelRow]:
    """Each kernel's name, DRAM bytes read and written and duration, in launch order, from `--csv --page raw`
    output (`--print-units base`: bytes, nanoseconds)."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        try:
            read, write = (float(row[m].replace(",", "")) for m in METRICS)
            order = int(row["ID"])
        except (KeyError, ValueError, AttributeError, TypeError):
            continue  # the units row
        rows.append((order, KernelRow(row.get("Kernel Name", ""), read, write, _number(row.get(DURATION)))))
    return [kernel for _, kernel in sorted(rows, key=lambda r: r[0])]


def _number(text: str | None) -> float | None:
    try:
        return float(text.replace(",", "")) if text else None
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------------- the verdict

def decide(reading: CounterReading, need: Requirement) -> Finding:
    """One finding: an error when the call's kernels read too little, otherwise info (measured, or why not).
    What ncu measured decides; the probe's own status file (written inside the candidate's process, so the
    candidate's to forge) only describes a pass in which ncu saw no range."""
    if reading.skipped:
        return _not_run(reading.skipped)
    if reading.sentinel:
        evidence = _evidence(reading, need)
        if not reading.kernels:
            return finding(CHECK, 7, "the timed call launched no GPU kernel: its output was not computed from its "
                           "inputs on the GPU (kept from an earlier call, or computed on the host)", evidence=evidence)
        if reading.read_bytes < MIN_READ_FRACTION * need.must_read:
            return finding(CHECK, 5, f"the timed call's kernels read {reading.read_bytes / need.must_read:.1%} of "
                           "the bytes the problem must read (part of the input skipped, or answers kept from "
                           "earlier calls)", evidence=evidence)
        return finding(CHECK, 5, "the timed call's DRAM reads cover the bytes the problem must read",
                       severity="info", evidence=evidence)
    status = reading.status
    if status is None:
        return _not_run(f"the probe did not start under ncu: {_log_tail(reading)}")
    if status.stage == "range":  # the probe's own NVTX / flush step failed, not the candidate
        return _not_run(f"the probe could not open its range: {status.error[:400]}")
    if not status.called:
        what = status.error or f"it ended during its {status.stage} step"
        return finding(CHECK, 8, "the candidate failed under the hardware-counter probe although it passed the "
                       "checks outside it", severity="warning", evidence=f"{what} (ncu: {_log_tail(reading)})"[:900])
    return _not_run(f"ncu measured nothing in the probe's range: {_log_tail(reading)}")


def _evidence(reading: CounterReading, need: Requirement) -> str:
    names = ", ".join(dict.fromkeys(n[:60] for n in reading.kernels[:8])) or "none"
    took = f", {DURATION} {reading.kernel_ns / 1e3:,.1f} us" if reading.kernel_ns is not None else ""
    return (f"ncu dram__bytes_read.sum {reading.read_bytes:,.0f} B, dram__bytes_write.sum "
            f"{reading.write_bytes:,.0f} B{took} over {len(reading.kernels)} kernel(s) [{names}] of one call on "
            f"shape {need.shape_index} {need.shape}, L2 flushed before each kernel; the problem must read "
            f"{need.must_read:,.0f} B (its bytes formula {need.formula_bytes:,.0f} B less {need.output_bytes:,} B "
            f"of outputs); floor {MIN_READ_FRACTION:g} of that")


# Without the pass the grading has no list of kernels taken outside the candidate's process: its launch audit then
# rests on records the candidate's process kept, which it can rewrite (docs/integrity.md, "launch records").
NOT_RUN_MESSAGE = ("hardware-counter check not run: the kernels launched are known only from the candidate's own "
                   "process (launch audit), whose records it could rewrite")


def _not_run(why: str) -> Finding:
    return finding(CHECK, 5, NOT_RUN_MESSAGE, severity="info", evidence=why)


def _log_tail(reading: CounterReading) -> str:
    tail = " | ".join(line.strip() for line in reading.log.strip().splitlines()[-6:])
    return tail[:600] or "no message"


def off_finding() -> Finding:
    return _not_run("turned off for this grading (--counters off)")


def applies(device: str) -> bool:
    return device in DEVICES


# ------------------------------------------------------------------------------------------------- the grading step

@dataclass
class ProbeTarget:
    """What one grading hands the pass: its pristine problem copy, the candidate copy, its timing cases."""

    pristine: Path               # the grading's copy of the problem (what the probe process imports)
    module: Path
    workdir: Path                # the grading's scratch folder (inputs/, check/ as the stages left them)
    device: str
    model_seeds: dict[int, int]
    env: dict[str, str]          # the stages' environment (allowlisted, with the grading's compile caches)
    isolation: Any = None        # kernelbench.eval.isolation.Isolation: the probe is confined as every stage


def counter_check(spec, target: ProbeTarget, cases: list, limit_s: float, own=None,
                  measured: Callable[[ProfiledCall], None] | None = None) -> list[Finding]:
    """The grading step: choose the shape, work out what it must read, measure one call, decide (`own`: which
    kernels the solution compiled itself, for the launch audit of that call; `measured` is told the call's shape
    and kernel time where ncu saw the call, for `profiled_time_findings` once the shape is timed)."""
    if spec.bytes is None:
        return [_not_run("the problem has no bytes formula, so no byte floor to check")]
    by_shape: dict[int, list] = {}
    for case in cases:
        by_shape.setdefault(case.shape_index, []).append(case)
    if not by_shape:
        return []
    index = probe_shape(spec, {i: c[0].shape for i, c in by_shape.items()})
    chosen = by_shape[index]
    out = target.workdir / "check" / f"out_{chosen[0].id}.kbt"
    inputs = [target.workdir / "inputs" / f"in_{c.id}.kbt" for c in chosen]
    missing = [p.name for p in (out, *inputs) if not p.is_file()]
    written = output_bytes(out) if not missing else None
    if written is None:
        why = f"grading files missing: {', '.join(missing)}" if missing else f"unknown dtype in {out.name}"
        return [_not_run(why)]
    need = Requirement(index, chosen[0].shape, spec.bytes_of(chosen[0].shape), written)
    if need.must_read <= 0:
        return [_not_run(f"the bytes formula ({need.formula_bytes:,.0f} B) does not exceed the outputs")]
    probe = probe_job(spec, target, index, chosen)
    workdir = target.workdir / "counters"
    reading = measure(probe, workdir, target.env, limit_s, cwd=target.workdir, isolation=target.isolation)
    found = decide(reading, need)
    if reading.sentinel and reading.kernel_ns is not None and measured is not None:
        measured(ProfiledCall(index, reading.kernel_ns / 1e6, len(reading.kernels)))
    if reading.sentinel:  # the call ran where ncu watched: what it returned there must be what the checks passed
        case = chosen[probe.warmup % len(chosen)]
        wrong = profiled_output_findings(spec, case, workdir / PROBE_OUTPUT, target.workdir)
        if not wrong and found.severity == "info":
            found = found.model_copy(update={"evidence": f"{found.evidence}; {OUTPUT_MATCHED} ({case.id})"})
        return [found, *wrong, *unprofiled_launch_findings(reading, spec, own)]
    return [found, *unprofiled_launch_findings(reading, spec, own)]


class ProfiledCall(NamedTuple):
    """The call the counter pass measured: its shape, and its kernels' summed time under ncu."""

    shape_index: int
    kernel_ms: float
    kernels: int


def profiled_time_findings(call: ProfiledCall, median_ms: float | None) -> list[Finding]:
    """A lead where the timed calls of the measured shape ran much faster than the kernels ncu listed for one call
    of it: a solution that shows the profiler slow allowed kernels and runs other code when timed sits far above 1
    (the output judgement cannot see it where both compute the right answer)."""
    if not median_ms or median_ms <= 0:
        return []
    ratio = call.kernel_ms / median_ms
    if ratio <= PROFILED_TIME_RATIO:
        return []
    return [finding(PROFILED_TIME_CHECK, 8, f"shape {call.shape_index}: the kernels of the call the counter pass "
                    f"measured took {ratio:.1f} times the shape's timed median, so the timed calls may run other "
                    "code than the profiled one", severity="warning",
                    evidence=f"ncu {DURATION} over {call.kernels} kernel(s): {call.kernel_ms:,.4f} ms; timed median "
                    f"{median_ms:,.4f} ms; a lead above {PROFILED_TIME_RATIO:g} (ncu serialises kernels and flushes "
                    "L2 before each, so a call of many short kernels takes longer there; honest kernels measured "
                    "0.16-1.02 on an H100, a solution that computed otherwise under the profiler 2.96)")]


def profiled_output_findings(spec, case, probe_output: Path, grading_dir: Path) -> list[Finding]:
    """The measured call's output against the candidate's checked output of the same inputs (which the judge
    passed), within the tolerance its timed calls are judged by: a candidate that finds the profiler (its
    injection library, its environment, the probe's own module) and computes something else there, showing ncu
    allowed kernels that read every byte while a forbidden library does the work elsewhere, is caught here. Read
    in the grader's process on the CPU; the probe only wrote the file."""
    from kernelbench.eval.portable.compare import compare_outputs
    from kernelbench.eval.tensorfile import load_inputs, load_output

    checked = grading_dir / "check" / f"out_{case.id}.kbt"
    try:
        expected = load_output(checked)
        inputs = load_inputs(grading_dir / "inputs" / f"in_{case.id}.kbt")
    except (OSError, ValueError) as exc:  # the grader's own files: nothing to hold against anyone
        return [finding(PROFILED_CHECK, 8, "the output of the call the counter pass measured was not judged",
                        severity="info", evidence=f"{checked.name}: {exc}"[:600])]
    # the file is the candidate's (its process wrote it): whatever it holds is judged, never a grader's failure
    try:
        got = load_output(probe_output)
    except Exception as exc:  # noqa: BLE001
        return [finding(PROFILED_CHECK, 8, PROFILED_MISSING,
                        evidence=f"{probe_output.name}: {type(exc).__name__}: {exc}"[:600])]
    tolerance = {**{k: v.model_dump() for k, v in spec.tolerance.items()},
                 **{k: v.model_dump() for k, v in case.tolerance.items()}}
    try:
        messages = compare_outputs(got, expected, tolerance, inputs, spec.index_outputs).messages
    except Exception as exc:  # noqa: BLE001
        messages = [f"the output could not be compared: {type(exc).__name__}: {exc}"]
    if not messages:
        return []
    return [finding(PROFILED_CHECK, 8, PROFILED_WRONG,
                    evidence=f"case {case.id}, shape {case.shape_index}: {'; '.join(messages)[:700]}")]


def unprofiled_launch_findings(reading: CounterReading, spec, own=None) -> list[Finding]:
    """The launch audit on the call ncu measured, the whole audit the checked calls get (forbidden libraries and,
    for a Kahan problem, uncompensated library sums). That call runs with torch's profiler off (ncu watches from
    outside the process), like a timed call: a candidate that behaves only while the profiler records (every
    checked call) shows its library kernels here."""
    from kernelbench.eval.integrity.launches import launch_audit, seen_in

    return seen_in(launch_audit(reading.kernels, spec, own),
                   "in the call the hardware-counter pass measured, with torch's profiler off")


def probe_job(spec, target: ProbeTarget, index: int, chosen: list) -> ProbeJob:
    """The timed loop's warm-up count plus a few calls the candidate cannot predict, then the measured call."""
    import secrets

    return ProbeJob(problem_dir=str(target.pristine), module=str(target.module), device=target.device,
                    shape_index=index, shape=chosen[0].shape, model_seed=target.model_seeds[index],
                    inputs_dir=str(target.workdir / "inputs"), case_ids=[c.id for c in chosen],
                    warmup=spec.timing.warmup + secrets.randbelow(len(chosen) + 1), status_path="")
