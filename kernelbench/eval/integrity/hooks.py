"""The small surface the grader calls (kernelbench.eval.grade / worker), one function per integration point.

    before the stages:  static_findings(solution, spec)              -> lint of solution + sidecars
                        worker_env(build_root)                       -> env for the candidate's worker
    in the worker:      with record_launches(device) as launches: out = model(*inputs)
    after the stages:   launch_findings(launches, spec, build_root)  -> launch audit + SASS requirement
                        kahan_findings(spec, problem_dir, out, oracle, case_id)
                        template snapshot / template_findings        -> grader exit / file edits
"""

from __future__ import annotations

import ast
from pathlib import Path

from kernelbench.eval.integrity.launches import launch_audit
from kernelbench.eval.integrity.lint import lint_solution
from kernelbench.eval.integrity.numerics import KAHAN_CHECKS, kahan_check
from kernelbench.eval.integrity.profiling import record_launches
from kernelbench.eval.integrity.sass import build_env, collect_sass, fp8_sass_check
from kernelbench.results.run import Finding

__all__ = [
    "kahan_findings",
    "launch_findings",
    "needs_sass_check",
    "record_launches",
    "static_findings",
    "worker_env",
]

FP8_CHECKS = {"fp8_tensor_cores", "fp8_sass", "fp8"}


def static_findings(solution: Path, spec) -> list[Finding]:
    return sorted(lint_solution(solution, spec), key=lambda f: (f.file or "", f.line or 0))


def worker_env(build_root: Path) -> dict[str, str]:
    """TRITON_CACHE_DIR / TORCH_EXTENSIONS_DIR under a folder the grader owns (the SASS check reads it)."""
    return build_env(build_root)


def needs_sass_check(spec) -> bool:
    return bool(set(getattr(spec, "leak_checks", [])) & FP8_CHECKS or getattr(spec, "required_sass", None))


def launch_findings(launches: dict[str, float], spec, build_root: Path | None = None,
                    device: str = "cuda", extra_binaries: list[Path] | None = None) -> list[Finding]:
    """Forbidden kernels/ops among what ran; on CUDA with an fp8 leak check, the FP8 tensor-core proof."""
    findings = launch_audit(launches, spec)
    if device == "cuda" and build_root is not None and needs_sass_check(spec):
        kernels, errors = collect_sass([Path(build_root), *(extra_binaries or [])])
        gpu_only = {n: t for n, t in launches.items() if not n.startswith("aten::")}
        findings += fp8_sass_check(gpu_only, kernels, errors, required=required_mnemonics(spec))
    return findings


def required_mnemonics(spec, arch: str | None = None) -> list[str] | None:
    """`required_sass` entries for the current GPU's arch (sm_90 on an H100), None when the problem names none."""
    table = getattr(spec, "required_sass", None) or {}
    if not table:
        return None
    if arch is None:
        import torch

        major, minor = torch.cuda.get_device_capability() if torch.cuda.is_available() else (9, 0)
        arch = f"sm_{major}{minor}"
    return table.get(arch) or table.get(arch.rstrip("a")) or None


def kahan_findings(spec, problem_dir: Path, out, oracle, case_id: str = "") -> list[Finding]:
    """For problems with a Kahan leak check: the row-sum bound from reference.py's ROW_SUM_BOUND."""
    if not set(getattr(spec, "leak_checks", [])) & KAHAN_CHECKS:
        return []
    bound = row_sum_bound(problem_dir)
    if bound is None:
        return []
    return kahan_check(out, oracle, bound, case_id=case_id)


def row_sum_bound(problem_dir: Path) -> float | None:
    """reference.py's ROW_SUM_BOUND (read from source), or None where the problem sets none."""
    bound = module_constant(Path(problem_dir) / "reference.py", "ROW_SUM_BOUND")
    return None if bound is None else float(bound)


def module_constant(path: Path, name: str):
    """A module-level constant read from source, without importing the file."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                try:
                    return ast.literal_eval(node.value)
                except ValueError:
                    return None
    return None

