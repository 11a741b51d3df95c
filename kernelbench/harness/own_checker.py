"""A published benchmark's own scripts run over a regraded cell, on this machine, beside our grading: its checker
and its timing script.

The board's verdict was its checker's on its authors' machine; ours is this grader's here. Running their checker
here over the same solution, set up the same way, tells the two kinds of disagreement apart: where their own
checker agrees with ours, the cell changed with the machine or the environment, not with the grader. Their timing
script does the same for a peak: the board's number against theirs here is the machine's part of a gap, theirs here
against ours the grader's (timer, input protocol, roof).

The checker is another project's code running an untrusted solution: it runs confined as a grading's candidate
stages are (kernelbench.eval.isolation), in a copy of the problem folder with the solution's files beside it and
their harness package where the checker looks for it, and in a pass of its own after the gradings
(kernelbench.harness.regrade.with_their_script): their checker must not run beside a grading's timed loop, and
their timing script runs alone on its GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kernelbench import confinement
from kernelbench.problems.layouts.base import OwnScript
from kernelbench.problems.problem import Problem
from kernelbench.results.run import CheckerOutcome, OwnBenchmarkRun, OwnCheckerRun

TIMEOUT_S = 1200.0
TAIL_LINES = 15
TAIL_CHARS = 4000


@dataclass
class ScriptRun:
    """What one run of their script left: its exit code (None where it did not finish), its output and time."""

    exit_code: int | None
    stdout: bytes
    output: bytes
    seconds: float
    isolation: str
    failure: str = ""  # why it did not finish: "did not start: ...", "did not finish within N s"


def run_their_script(problem: Problem, script: OwnScript, solution_folder: Path, device: str, scratch: Path,
                     timeout_s: float) -> ScriptRun:
    """Their script over the solution set up in `solution_folder`, confined, in a tree built under `scratch`."""
    problem_copy = lay_out(problem.folder, script, solution_folder, scratch)
    command, isolation = _command(script, problem_copy, scratch, device)
    began = time.monotonic()
    try:
        proc = subprocess.run(command.argv, capture_output=True, check=False, timeout=timeout_s, env=command.env,
                              pass_fds=command.pass_fds, cwd=problem_copy,
                              preexec_fn=confinement.apply_limits if isolation == "bwrap" else None)
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"") + (exc.stderr or b"")
        return ScriptRun(None, exc.stdout or b"", output, round(time.monotonic() - began, 1), isolation,
                         failure=f"did not finish within {timeout_s:.0f} s")
    except OSError as exc:
        return ScriptRun(None, b"", b"", 0.0, isolation, failure=f"did not start: {exc}")
    finally:
        command.close()
    return ScriptRun(proc.returncode, proc.stdout, proc.stdout + proc.stderr, round(time.monotonic() - began, 1),
                     isolation)


def run_own_checker(problem: Problem, checker: OwnScript, solution_folder: Path, device: str,
                    scratch: Path, timeout_s: float = TIMEOUT_S) -> OwnCheckerRun:
    """Their checker over the solution set up in `solution_folder`, in a tree built under `scratch`."""
    run = run_their_script(problem, checker, solution_folder, device, scratch, timeout_s)
    if run.exit_code is None:
        return OwnCheckerRun(outcome="error", seconds=run.seconds, script=checker.script,
                             output_tail=_with_failure(run), isolation=run.isolation)
    return OwnCheckerRun(outcome=verdict_of(run.exit_code, run.stdout), exit_code=run.exit_code,
                         seconds=run.seconds, script=checker.script, output_tail=_tail(run.output),
                         isolation=run.isolation)


def run_own_benchmark(problem: Problem, benchmark: OwnScript, solution_folder: Path, device: str,
                      scratch: Path, timeout_s: float = TIMEOUT_S) -> OwnBenchmarkRun:
    """Their timing script over the solution set up in `solution_folder`: each shape's milliseconds and their peak
    fraction as their script printed them (`timing_of`)."""
    run = run_their_script(problem, benchmark, solution_folder, device, scratch, timeout_s)
    shape_ms, peak = timing_of(run.stdout)
    timed = run.exit_code == 0 and peak is not None
    return OwnBenchmarkRun(outcome="timed" if timed else "error", exit_code=run.exit_code, seconds=run.seconds,
                           script=benchmark.script, shape_ms=shape_ms, peak_fraction=peak if timed else None,
                           roof_of=problem.roof_named(), output_tail=_with_failure(run),
                           isolation=run.isolation)


# their benchmark.py's lines (its docstring: "Output lines the harness picks up"):
#   shape=<idx> variant=solution tflops=<N> gbps=<N> ms=<N>
#   peak_fraction: <N>  (geomean over shapes of solution's peak_fraction)
SHAPE_LINE = re.compile(r"^shape=(\d+) variant=solution\b.*\bms=([0-9.eE+-]+)\s*$")
PEAK_LINE = re.compile(r"^peak_fraction:\s*([0-9.eE+-]+)\s*$")


def timing_of(stdout: bytes) -> tuple[dict[int, float], float | None]:
    """Each shape's solution milliseconds and the final peak fraction from their timing script's output; a number
    that is not finite and non-negative is left out (their script's output is the candidate's process's too)."""
    shape_ms: dict[int, float] = {}
    peak = None
    for line in stdout.decode(errors="replace").splitlines():
        line = line.strip()
        if match := SHAPE_LINE.match(line):
            value = _plain_number(match.group(2))
            if value is not None:
                shape_ms[int(match.group(1))] = value
        elif match := PEAK_LINE.match(line):
            peak = _plain_number(match.group(1))
    return shape_ms, peak


def _plain_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and value != float("inf") else None


def _with_failure(run: ScriptRun) -> str:
    tail = _tail(run.output)
    return f"{tail}\n[{run.failure}]".lstrip("\n") if run.failure else tail


def lay_out(folder: Path, checker: OwnScript, solution_folder: Path, scratch: Path) -> Path:
    """The problem folder copied under `scratch` with the solution's files beside it (the problem's own files
    win a name they share: the checker imports the problem's reference) and their harness where the checker
    finds it. Returns the copy."""
    problem_copy = scratch / "bench" / "problems" / Path(folder).name
    shutil.copytree(solution_folder, problem_copy, symlinks=True)
    shutil.copytree(folder, problem_copy, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "baselines"))
    harness = (problem_copy / checker.harness_at).resolve()
    if scratch.resolve() not in harness.parents:
        raise ValueError(f"the checker's harness would lie outside its scratch folder: {checker.harness_at}")
    shutil.copytree(checker.harness, harness, ignore=shutil.ignore_patterns("__pycache__"))
    return problem_copy


def verdict_of(exit_code: int, stdout: bytes) -> CheckerOutcome:
    """PASS when the checker exits 0 having said PASS; FAIL when it exits non-zero having said FAIL (their
    check.py prints one of the two); anything else (a crash, silence) is an error of the run, not a verdict."""
    text = stdout.decode(errors="replace")
    if exit_code == 0 and "PASS" in text:
        return "PASS"
    if exit_code != 0 and "FAIL" in text:
        return "FAIL"
    return "error"


@dataclass
class _Plain:
    """The checker's command where no sandbox can be set up (the grading itself then runs unconfined too)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        pass


def _command(checker: OwnScript, problem_copy: Path, scratch: Path, device: str):
    from kernelbench.eval.isolation import isolation_for, sandboxed
    from kernelbench.eval.process import worker_env

    env = worker_env(device)
    # their checker imports reference.py and solution.py from its own folder: the script's folder must be on
    # the import path, which the grader's own stages leave off
    env.pop("PYTHONSAFEPATH", None)
    argv = [sys.executable, checker.script]
    isolation = isolation_for(device)
    if isolation.sandboxed:
        assert isolation.bwrap is not None  # what sandboxed means
        command = sandboxed(argv, isolation.bwrap, workdir=scratch, device=device, env=env,
                            writable=(scratch / "bench",), cwd=problem_copy)
        return command, "bwrap"
    return _Plain(argv=argv, env={**env, "HOME": str(scratch)}), isolation.note


def _tail(output: bytes) -> str:
    lines = output.decode(errors="replace").splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]
