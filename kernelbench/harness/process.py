"""Run one agent process under a wall-clock budget, its output going straight to files.

The agent gets its own process group (and, sandboxed, its own PID namespace), so the budget is enforced on
everything it started: SIGTERM to the whole group, then SIGKILL after a grace period. Output is written to
files, never held in memory; a process that floods its output past the cap is stopped like one that ran out of
time, so a runaway agent cannot fill the disk.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kernelbench import confinement

GRACE_S = 10.0
POLL_S = 0.1
MAX_STDOUT_BYTES = 1 << 30      # a 45-minute stream-json session is tens of MB; a GB is a flood
MAX_STDERR_BYTES = 64 << 20


@dataclass
class ProcessResult:
    exit_code: int | None
    elapsed_s: float
    timed_out: bool = False
    flooded: bool = False           # stopped because its output passed the cap
    interrupted: bool = False       # stopped because the harness itself was interrupted
    signal: str | None = None       # the signal that ended it, when one did

    @property
    def stopped(self) -> bool:
        return self.timed_out or self.flooded or self.interrupted


def run_budgeted(argv: list[str], *, cwd: Path, env: dict[str, str], budget_s: float, stdout_path: Path,
                 stderr_path: Path, stdin_text: str | None = None, grace_s: float | None = None,
                 max_stdout: int | None = None, max_stderr: int | None = None, confined=None) -> ProcessResult:
    """Start `argv`, wait until it exits or the budget runs out, and stop its whole process group. `confined`
    (a harness.sandbox.Wrapped) keeps the sandbox's descriptors open for it and applies the confinement's
    limits."""
    grace_s = GRACE_S if grace_s is None else grace_s
    max_stdout = MAX_STDOUT_BYTES if max_stdout is None else max_stdout
    max_stderr = MAX_STDERR_BYTES if max_stderr is None else max_stderr
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                start_new_session=True, pass_fds=confined.pass_fds if confined else (),
                                preexec_fn=confinement.apply_limits if confined else None)
        _feed_stdin(proc, stdin_text)
        result = ProcessResult(exit_code=None, elapsed_s=0.0)
        try:
            _wait(proc, start, budget_s, stdout_path, stderr_path, max_stdout, max_stderr, result)
        except BaseException:
            result.interrupted = True
            raise
        finally:
            if proc.poll() is None:
                # a flooding process gets no grace period: every second of it is more output on disk
                stop_group(proc, 0.0 if result.flooded else grace_s)
            result.exit_code = proc.wait()
            result.elapsed_s = time.monotonic() - start
            if result.exit_code is not None and result.exit_code < 0:
                result.signal = signal.Signals(-result.exit_code).name
    if result.flooded:
        _cut_to(stdout_path, max_stdout)
        _cut_to(stderr_path, max_stderr)
    return result


def _cut_to(path: Path, limit: int) -> None:
    """Keep the first `limit` bytes: what was written between the check and the kill stays bounded too."""
    if _size(path) > limit:
        os.truncate(path, limit)


def _feed_stdin(proc: subprocess.Popen, text: str | None) -> None:
    if text is None or proc.stdin is None:
        return
    try:
        proc.stdin.write(text.encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:
        pass


def _wait(proc: subprocess.Popen, start: float, budget_s: float, stdout_path: Path, stderr_path: Path,
          max_stdout: int, max_stderr: int, result: ProcessResult) -> None:
    while proc.poll() is None:
        if time.monotonic() - start >= budget_s:
            result.timed_out = True
            return
        if _size(stdout_path) > max_stdout or _size(stderr_path) > max_stderr:
            result.flooded = True
            return
        try:
            proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def stop_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the process group, give it `grace_s` to exit, then SIGKILL what is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    # the leader may be gone while children it left behind still hold the group
    _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
