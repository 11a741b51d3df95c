"""Process control for the grading's stages: each stage a fresh worker process with a time limit, its process
group killed as a whole, its output kept to a bounded head and tail (a flood cannot fill the disk or memory), its
reply accepted only when signed and valid (kernelbench.eval.protocol); a stage run beside a partner (the check
stage beside the judge) is stopped soon after the partner ends."""

from __future__ import annotations

import contextlib
import contextvars
import hmac
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from kernelbench import confinement
from kernelbench.eval.conditions import GpuSampler
from kernelbench.eval.isolation import GRADER_ROOT, SOLUTION_FOLDER, Isolation, sandboxed
from kernelbench.eval.pacing import Pacer, open_pacer
from kernelbench.eval.protocol import (
    CANDIDATE_ROLES,
    REPLY_TYPES,
    RESULT,
    SIGNATURE,
    AnyJob,
    BenchJob,
    FreshJob,
    Message,
    StageFailure,
    StageInput,
    parse_reply,
    sign,
)

KEEP_BYTES = 32 * 1024
PARTNER_GRACE_S = 5.0
WATCH_EVERY_S = 0.25
Reply = TypeVar("Reply", bound=Message)


@dataclass
class StageRun:
    role: str
    reply: Message | None = None  # the role's reply or a StageFailure, validated (None: no valid signed reply)
    error: str = ""
    timed_out: bool = False
    returncode: int | None = None
    elapsed_s: float = 0.0
    output: str = ""             # what the process printed (head and tail), for the log only
    pacer: Pacer | None = None   # a paced bench stage: what the grader's own process saw of its timed calls
    gpu: GpuSampler | None = None  # a GPU bench stage: the GPU's conditions as the grader's own process read them

    def reply_as(self, kind: type[Reply]) -> Reply | None:
        """The reply when the stage answered for its role (not a failure), else None."""
        return self.reply if isinstance(self.reply, kind) else None

    @property
    def failure(self) -> StageFailure | None:
        return self.reply if isinstance(self.reply, StageFailure) else None


class BoundedReader(threading.Thread):
    """Drains a pipe, keeping the first and last KEEP_BYTES and counting the rest."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.head, self.tail, self.total = stream, b"", b"", 0

    def run(self) -> None:
        while chunk := self.stream.read(65536):
            self.total += len(chunk)
            if len(self.head) < KEEP_BYTES:
                self.head += chunk[: KEEP_BYTES - len(self.head)]
            self.tail = (self.tail + chunk)[-KEEP_BYTES:]

    def text(self) -> str:
        if self.total <= 2 * KEEP_BYTES:
            body = self.head + self.tail[len(self.head) - self.total:] if self.total > KEEP_BYTES else self.head
            return body.decode(errors="replace")
        skipped = self.total - 2 * KEEP_BYTES
        return (self.head.decode(errors="replace") + f"\n[... {skipped} bytes of output not kept ...]\n"
                + self.tail.decode(errors="replace"))


# The GPU this thread's gradings run on (`on_gpu`): several gradings of one process (kernelbench regrade --gpus)
# each keep to their own GPU, where the process's CUDA_VISIBLE_DEVICES would send them all to its first
_assigned_gpu: contextvars.ContextVar[str | None] = contextvars.ContextVar("kernelbench_assigned_gpu", default=None)


@contextlib.contextmanager
def on_gpu(gpu: str | None):
    """Stages started inside run on `gpu` (an entry of this process's CUDA_VISIBLE_DEVICES, or a device index
    where that is unset); None leaves the process's own choice."""
    token = _assigned_gpu.set(gpu)
    try:
        yield
    finally:
        _assigned_gpu.reset(token)


def visible_gpus() -> list[str]:
    """The GPUs this process may hand to its gradings, as CUDA_VISIBLE_DEVICES entries (nvidia-smi's count where
    the variable is unset; empty without a GPU)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [entry.strip() for entry in visible.split(",") if entry.strip() and entry.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i in range(sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")))]


def worker_env(device: str) -> dict[str, str]:
    """Every stage's environment: the allowlisted part of the grader's (no credential, no secret seed: the
    stages that need the seed get it in their job), and the settings below."""
    env = confinement.allowed_environment(dict(os.environ))
    # cuBLAS keeps the workspace a production caller gets: the deterministic ":4096:8" setting made cuBLASLt's
    # FP8 GEMMs up to 4x slower on the H100 (benchmarks/gpu_stage_environment.py), so every library line was
    # timed slower than its users see it; outputs are judged by tolerance, not bitwise, so none depends on it
    env.pop("CUBLAS_WORKSPACE_CONFIG", None)
    env.update({"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1"})
    repo = str(GRADER_ROOT)  # the stages import the very grader this process runs
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run in the interpreter on the CPU
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif (assigned := _assigned_gpu.get()) is not None:
        env["CUDA_VISIBLE_DEVICES"] = assigned
    else:
        env["CUDA_VISIBLE_DEVICES"] = one_visible_gpu(env.get("CUDA_VISIBLE_DEVICES"))
    return env


def one_visible_gpu(visible: str | None) -> str:
    """A grading sees one GPU, the first it was given: work sent to a second GPU would finish outside the
    device-wide synchronise that closes every timed call (class 9)."""
    return "0" if visible is None else visible.split(",")[0].strip()


def child_limits() -> None:
    """In a trusted stage's child: no core dumps, bounded file sizes and process count (kernelbench.confinement);
    a confined stage also gets the sandbox's memory bound (confinement.apply_limits)."""
    confinement.apply_common_limits()


# every stage process not yet finished, so that a caller grading in a thread can end them all (kill_live_stages)
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def kill_live_stages() -> int:
    """Kill the process group of every stage still running in this process's gradings (a Ctrl-C in a caller whose
    gradings run in worker threads, which the signal never reaches); returns how many."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        kill_group(proc)
    return len(procs)


@dataclass
class StageHandle:
    run: StageRun
    proc: subprocess.Popen
    reader: BoundedReader
    key: bytes | None                  # None for a candidate stage, whose reply is its claim, never signed
    out_dir: Path
    started: float
    watch: confinement.DiskWatch | None = None
    pacer: Pacer | None = None
    gpu: GpuSampler | None = None


def start_stage(job: AnyJob, *, cwd: Path, extra_env: dict[str, str] | None = None,
                sandbox: Isolation | None = None, pace: bool = False, watch_gpu: bool = False,
                gpu_uuid: str | None = None) -> StageHandle:
    """Start a worker; the job goes in on stdin. A trusted stage (judge, fresh) gets a fresh signing key with it;
    a candidate stage gets none: a key in the candidate's process would be the candidate's to use, so its reply
    is read as its claim (kernelbench.eval.verdict weighs it against what was seen outside that process). With a
    sandbox, the worker runs confined in bubblewrap (kernelbench.eval.isolation), its own out folder and the
    candidate's shared folders of `cwd` the only places it may write. `pace` (a candidate's bench stage): the
    grader's pacer answers its timed calls on fresh inputs (kernelbench.eval.pacing). `watch_gpu`: the grader
    samples the stage's GPU (`gpu_uuid`, the judge's report, else the stage's CUDA_VISIBLE_DEVICES entry) from
    before the process starts until it is killed (kernelbench.eval.conditions)."""
    out_dir = Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = job.fresh_kept if isinstance(job, BenchJob) else 0
    pacer, theirs = open_pacer(kept) if pace and isinstance(job, BenchJob | FreshJob) else (None, None)
    if theirs is not None:
        job = job.model_copy(update={"pacer_fd": theirs.fileno()})
    key = None if job.role in CANDIDATE_ROLES else secrets.token_bytes(32)
    payload = StageInput(key=key.hex() if key else None, job=job).model_dump_json().encode()
    # -P: the working folder (the grading's) is not put on sys.path, so a `kernelbench/` planted there cannot
    # stand in for the grader in a later stage
    argv = [sys.executable, "-P", "-m", "kernelbench.eval.worker"]
    env = {**worker_env(job.device), **(extra_env or {})}
    visible_gpu = env.get("CUDA_VISIBLE_DEVICES", "")  # the stage's GPU, before a sandbox rewrites the environment
    pass_fds: tuple[int, ...] = (theirs.fileno(),) if theirs is not None else ()
    command = None
    if sandbox is not None and sandbox.bwrap:
        addable = (Path(cwd) / SOLUTION_FOLDER,) if job.role in CANDIDATE_ROLES else ()
        command = sandboxed(argv, sandbox.bwrap, workdir=cwd, device=job.device, env=env, writable=(out_dir,),
                            addable=addable)
        argv, env, pass_fds = command.argv, command.env, pass_fds + command.pass_fds
    # from before the process starts: its first calls are in the readings
    gpu = GpuSampler(gpu_uuid or visible_gpu).begin() if watch_gpu else None
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                cwd=cwd, env=env, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=confinement.apply_limits if command is not None else child_limits)
    except BaseException:
        if gpu is not None:
            gpu.end()
        raise
    finally:
        if command is not None:
            command.close()
        if theirs is not None:
            theirs.close()
    with _live_lock:
        _live.add(proc)
    assert proc.stdin is not None  # opened with stdin=PIPE
    reader = BoundedReader(proc.stdout)
    reader.start()
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    return StageHandle(StageRun(role=job.role), proc, reader, key, out_dir, time.monotonic(),
                       command.watch if command is not None else None, pacer, gpu)


def finish_stage(handle: StageHandle, timeout_s: float) -> StageRun:
    """Wait for the worker (at most `timeout_s` from its start, and only while it writes within the sandbox's
    bound), kill its process group, read its result."""
    run = handle.run
    while True:
        remaining = max(0.0, timeout_s - (time.monotonic() - handle.started))
        if handle.watch is not None and handle.watch.check():
            run.error = f"{run.role} stage {handle.watch.exceeded} and was stopped"
            break
        try:
            run.returncode = handle.proc.wait(timeout=min(remaining, WATCH_EVERY_S))
            break
        except subprocess.TimeoutExpired:
            if handle.watch is not None and handle.watch.check():
                run.error = f"{run.role} stage {handle.watch.exceeded} and was stopped"
                break
            if remaining <= WATCH_EVERY_S:
                run.timed_out = True
                run.error = f"{run.role} stage exceeded its limit of {timeout_s:g} s and was killed"
                break
    kill_group(handle.proc)
    with _live_lock:
        _live.discard(handle.proc)
    if handle.pacer is not None:
        handle.pacer.stop()
        run.pacer = handle.pacer
    if handle.gpu is not None:
        handle.gpu.end()
        run.gpu = handle.gpu
    handle.reader.join(timeout=5)
    run.elapsed_s = time.monotonic() - handle.started
    run.output = handle.reader.text()
    if not run.timed_out and not run.error:
        _read_result(run, handle.out_dir, handle.key)
    return run


def finish_beside(handle: StageHandle, partner: StageHandle, limit_s: float,
                  waiting: Callable[[], None] | None = None) -> StageRun:
    """End a stage run beside a partner (the check stage beside the judge): a partner that ends first stops the
    stage after a short grace instead of leaving it to its full limit. `waiting` is called about once a second
    while both run (progress)."""
    stopped = wait_either(handle, partner, limit_s, waiting)
    run = finish_stage(handle, limit_s if not stopped else time.monotonic() - handle.started + PARTNER_GRACE_S)
    if stopped and run.timed_out:
        run.error = (f"{run.role} stage stopped {PARTNER_GRACE_S:g} s after the judge had finished (it was "
                     "waiting for something that will not come, e.g. grading files it deleted)")
    return run


def wait_either(handle: StageHandle, partner: StageHandle, limit_s: float,
                waiting: Callable[[], None] | None = None) -> bool:
    """Wait until `handle` ends, its limit passes or it writes past its sandbox's bound (False), or until
    `partner` ends first (True)."""
    told = time.monotonic()
    while time.monotonic() - handle.started < limit_s:
        if waiting is not None and time.monotonic() - told >= 1.0:
            waiting()
            told = time.monotonic()
        if handle.proc.poll() is not None:
            return False
        if handle.watch is not None and handle.watch.check():
            return False  # finish_stage sees the bound passed and stops the stage
        if partner.proc.poll() is not None:
            try:
                handle.proc.wait(timeout=PARTNER_GRACE_S)
                return False
            except subprocess.TimeoutExpired:
                return True
        time.sleep(0.05)
    return False


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the stage's whole process group (children it forked included)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _read_result(run: StageRun, out_dir: Path, key: bytes | None) -> None:
    """The stage's reply: a trusted stage's only when its signature holds; a candidate stage's (key None) as its
    claim, parsed and validated like any other."""
    data_path, sig_path = out_dir / RESULT, out_dir / SIGNATURE
    if not data_path.is_file() or (key is not None and not sig_path.is_file()):
        run.error = (f"{run.role} stage ended (exit status {run.returncode}) without a result: the process was "
                     "killed or crashed")
        return
    data = data_path.read_bytes()
    if key is not None and not hmac.compare_digest(sign(key, data), sig_path.read_text().strip()):
        run.error = f"{run.role} stage result failed its signature check (written by something else)"
        return
    run.reply, run.error = read_reply(run.role, data)


def read_reply(role: str, data: bytes) -> tuple[Message | None, str]:
    """A signed reply validated against the protocol: the role's own reply type, or a failure (with its error)."""
    try:
        reply = parse_reply(data)
    except ValidationError as exc:
        return None, f"{role} stage reply does not follow the protocol: {str(exc)[:1500]}"
    if isinstance(reply, StageFailure):
        return reply, f"{role} stage failed: {reply.fatal}"
    if not isinstance(reply, REPLY_TYPES[role]):
        return None, f"{role} stage replied as a {reply.kind} stage"
    return reply, ""
