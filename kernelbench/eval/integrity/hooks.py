"""The one surface through which the grader calls its guards outside the stage processes (`Guards`), loaded once
per grading by `load_guards`: a guard module that cannot be imported makes the grading a harness error with the
reason, never a grading without that guard.

    before the stages:  static_findings(solution, spec)            -> the lint of the solution and its sidecars
                        build_env(root), kahan_bound(spec, problem) -> what the stages are given
    after the stages:   launch_findings(launches, spec)             -> the launch audit of the checked calls
                        sass_findings(launches, spec, ...)          -> the FP8 tensor-core proof (CUDA, FP8 problems)
                        timed_launch_findings(names, spec)          -> the launch audit of the timed calls
                        compiled_kernels(build_env)                  -> torch.compile's kernels, named by their ops
                        counter_findings(spec, target, cases, ...)  -> the hardware-counter pass (CUDA)
                        template_findings(snapshot, folder)         -> grader exit / file edits

The guards of the stage processes themselves are armed by kernelbench.eval.worker.arming (candidate stages) and
called by kernelbench.eval.worker.comparison (Kahan row sums). Each guard here returns findings; one that raises
is reported as `GuardFailed` (a harness error), not as a finding or a verdict.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kernelbench.base.models import Finding
from kernelbench.eval.failures import GuardFailed, GuardUnavailable
from kernelbench.problems.modules import module_constant  # noqa: F401  (read from source, re-exported)

# every guard module the grader's parent process runs, imported when the surface is loaded (even those a given
# grading may not call, e.g. the SASS check on the CPU), so a missing one fails every grading at once
GUARD_MODULES = ("kernelbench.eval.integrity.lint", "kernelbench.eval.integrity.launches",
                 "kernelbench.eval.integrity.machine_code",
                 "kernelbench.eval.integrity.sass", "kernelbench.eval.integrity.compiled",
                 "kernelbench.eval.integrity.counters", "kernelbench.eval.integrity.numerics",
                 "kernelbench.eval.integrity.templates")
FP8_CHECKS = {"fp8_tensor_cores", "fp8_sass", "fp8"}   # FP8 tensor cores required
FP8_REPORTED = {"fp8_reported"}                          # their share reported, no verdict
T = TypeVar("T")


def load_guards() -> Guards:
    for name in GUARD_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise GuardUnavailable(name, exc) from exc
    return Guards()


@contextmanager
def running(guard: str) -> Iterator[None]:
    try:
        yield
    except GuardFailed:
        raise
    except Exception as exc:  # a guard's own failure: the grading cannot be trusted without it
        raise GuardFailed(guard, exc) from exc


def _run(guard: str, call: Callable[[], T]) -> T:
    with running(guard):
        return call()


class Guards:
    """The parent-side guards of one grading (see the module docstring for when each runs)."""

    def static_findings(self, solution: Path, spec) -> list[Finding]:
        from kernelbench.eval.integrity.lint import lint_solution

        return _run("ast_lint", lambda: lint_solution(solution, spec))

    def build_env(self, root: Path) -> dict[str, str]:
        """Compile caches the grader owns (TRITON_CACHE_DIR, TORCH_EXTENSIONS_DIR, TORCHINDUCTOR_CACHE_DIR, ...),
        so the code of every kernel built while grading can be inspected."""
        from kernelbench.eval.integrity.sass import build_env

        return _run("build caches", lambda: build_env(root))

    def kahan_bound(self, spec, problem) -> float | None:
        """The reference's ROW_SUM_BOUND for a problem with a Kahan leak check (None: no such check); `problem` is
        the opened Problem (its layout reads the bound)."""
        from kernelbench.eval.integrity.numerics import KAHAN_CHECKS

        if not set(spec.leak_checks) & KAHAN_CHECKS:
            return None
        return problem.row_sum_bound()

    def compiled_kernels(self, build_env: dict[str, str]) -> list[str]:
        from kernelbench.eval.integrity.compiled import compiled_kernel_names

        return _run("compiled_names", lambda: compiled_kernel_names(build_env.get("TORCHINDUCTOR_CACHE_DIR")))

    def launch_findings(self, launches: dict[str, float], spec, own=None) -> list[Finding]:
        """Forbidden kernels and ops among what ran (and, for a Kahan problem, uncompensated library sums); `own`:
        which kernels the solution compiled from its own sources (integrity.machine_code)."""
        from kernelbench.eval.integrity.launches import launch_audit

        return _run("launch_audit", lambda: launch_audit(launches, spec, own))

    def needs_sass(self, spec, device: str) -> bool:
        return device == "cuda" and needs_sass_check(spec)

    def sass_findings(self, per_shape: dict[int, dict[str, float]], spec, *, arch: str | None,
                      code) -> list[Finding]:
        """The FP8 tensor-core rule, shape by shape, on the machine code of the kernels that ran
        (integrity.sass.fp8_shape_findings): a verdict where the problem requires FP8 tensor cores, a report where
        its rules allow another path."""
        from kernelbench.eval.integrity.sass import fp8_shape_findings

        def check() -> list[Finding]:
            return fp8_shape_findings(per_shape, code.code_of, code.errors, required_mnemonics(spec, arch),
                                      enforce=fp8_enforced(spec))

        return _run("fp8_sass", check)

    def custom_kernel_findings(self, per_shape: dict[int, dict[str, float]], code) -> list[Finding]:
        """Whether kernels compiled from the solution's own sources ran (a deck that asks for a custom kernel)."""
        from kernelbench.eval.integrity.machine_code import custom_kernel_findings

        return _run("custom_kernel", lambda: custom_kernel_findings(per_shape, code))

    def timed_launch_findings(self, names: list[str], spec, own=None) -> list[Finding]:
        from kernelbench.eval.integrity.launches import launch_audit, seen_in

        return _run("launch_audit", lambda: seen_in(launch_audit(names, spec, own), "in the timed calls only"))

    def counter_findings(self, spec, target, cases: list, limit_s: float, own=None, measured=None) -> list[Finding]:
        from kernelbench.eval.integrity import counters

        return _run("dram_bytes", lambda: counters.counter_check(spec, target, cases, limit_s, own=own,
                                                                  measured=measured))

    def counters_apply(self, device: str) -> bool:
        from kernelbench.eval.integrity import counters

        return counters.applies(device)

    def counters_off(self) -> list[Finding]:
        from kernelbench.eval.integrity import counters

        return [counters.off_finding()]

    def template_findings(self, before, folder: Path) -> list[Finding]:
        """`folder`: the problem's own (a change there is a warning); any other watched file is a workspace copy."""
        from kernelbench.eval.integrity.templates import grading_template_findings

        return _run("template_hash", lambda: grading_template_findings(before, folder))


def needs_sass_check(spec) -> bool:
    return bool(set(spec.leak_checks) & (FP8_CHECKS | FP8_REPORTED) or spec.required_sass)


def fp8_enforced(spec) -> bool:
    """Whether the problem requires FP8 tensor cores (a shape below the rule is INVALID) rather than only
    reporting the shares (`fp8_reported`: a deck whose rules let an up-cast path pass, slower)."""
    return bool(set(spec.leak_checks) & FP8_CHECKS or spec.required_sass)


def required_mnemonics(spec, arch: str | None = None) -> list[str] | None:
    """`required_sass` entries for the current GPU's arch (sm_90 on an H100), None when the problem names none."""
    table = spec.required_sass or {}
    if not table:
        return None
    if arch is None:
        import torch

        major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
        arch = f"sm_{major}{minor}"
    return table.get(arch) or table.get(arch.rstrip("a")) or None
