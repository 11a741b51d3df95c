"""A published benchmark's own checker run over a regraded cell, on this machine, beside our grading.

The board's verdict was its checker's on its authors' machine; ours is this grader's here. Running their checker
here over the same solution, set up the same way, tells the two kinds of disagreement apart: where their own
checker agrees with ours, the cell changed with the machine or the environment, not with the grader.

The checker is another project's code running an untrusted solution: it runs confined as a grading's candidate
stages are (kernelbench.eval.isolation), in a copy of the problem folder with the solution's files beside it and
their harness package where the checker looks for it, and in a pass of its own after the gradings
(kernelbench.harness.regrade.check_with_their_checker): their checker must not run beside a grading's timed loop.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kernelbench import confinement
from kernelbench.problems.layouts.base import OwnChecker
from kernelbench.results.run import CheckerOutcome, OwnCheckerRun

TIMEOUT_S = 1200.0
TAIL_LINES = 15
TAIL_CHARS = 4000


def run_own_checker(problem_dir: Path, checker: OwnChecker, solution_folder: Path, device: str,
                    scratch: Path, timeout_s: float = TIMEOUT_S) -> OwnCheckerRun:
    """Their checker over the solution set up in `solution_folder`, in a tree built under `scratch`."""
    problem_copy = lay_out(problem_dir, checker, solution_folder, scratch)
    command, isolation = _command(checker, problem_copy, scratch, device)
    began = time.monotonic()
    try:
        proc = subprocess.run(command.argv, capture_output=True, check=False, timeout=timeout_s, env=command.env,
                              pass_fds=command.pass_fds, cwd=problem_copy,
                              preexec_fn=confinement.apply_limits if isolation == "bwrap" else None)
    except subprocess.TimeoutExpired as exc:
        return OwnCheckerRun(outcome="error", seconds=round(time.monotonic() - began, 1), script=checker.script,
                             output_tail=_tail((exc.stdout or b"") + (exc.stderr or b"")) +
                             f"\n[did not finish within {timeout_s:.0f} s]", isolation=isolation)
    except OSError as exc:
        return OwnCheckerRun(outcome="error", script=checker.script, output_tail=f"did not start: {exc}",
                             isolation=isolation)
    finally:
        command.close()
    output = proc.stdout + proc.stderr
    return OwnCheckerRun(outcome=verdict_of(proc.returncode, proc.stdout), exit_code=proc.returncode,
                         seconds=round(time.monotonic() - began, 1), script=checker.script,
                         output_tail=_tail(output), isolation=isolation)


def lay_out(problem_dir: Path, checker: OwnChecker, solution_folder: Path, scratch: Path) -> Path:
    """The problem folder copied under `scratch` with the solution's files beside it (the problem's own files
    win a name they share: the checker imports the problem's reference) and their harness where the checker
    finds it. Returns the copy."""
    problem_copy = scratch / "bench" / "problems" / Path(problem_dir).name
    shutil.copytree(solution_folder, problem_copy, symlinks=True)
    shutil.copytree(problem_dir, problem_copy, symlinks=True, dirs_exist_ok=True,
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


def _command(checker: OwnChecker, problem_copy: Path, scratch: Path, device: str):
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


def checker_of(problem_dir: Path) -> OwnChecker | None:
    from kernelbench.problems.layouts import layout_of

    return layout_of(Path(problem_dir)).own_checker(Path(problem_dir))

