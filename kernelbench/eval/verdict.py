"""From stage records to verdicts: the candidate's guard records (its own process) and the judge's comparison
(a trusted process) become one SeedResult per case and integrity findings."""

from __future__ import annotations

import math
from typing import Any

from kernelbench.eval.cases import Case
from kernelbench.results.run import Finding, SeedResult

CLASS_NAMES = {1: "library bypass", 2: "stale memory", 3: "input mutation", 4: "degenerate output",
               5: "partial computation", 6: "seed or shape overfitting", 7: "memoisation",
               8: "environment sniffing", 9: "side streams", 10: "lazy outputs", 11: "in-process tampering",
               12: "grader exit / file edits", 13: "L2 persistence", 14: "precision downgrade",
               15: "aggregate gaming", 16: "invalid launches"}
# error-size detector: candidate error vs the reference's own error, both against an fp64 oracle
ERROR_RATIO_WARN, ERROR_RATIO_FAIL, ERROR_MIN_ULPS = 8.0, 64.0, 4.0


class ReferenceFailed(Exception):
    """The problem's own reference could not run a case: a problem bug, not the candidate's."""


def finding(check: str, klass: int, message: str, evidence: str = "", severity: str = "error") -> Finding:
    return Finding(check=check, klass=klass, class_name=CLASS_NAMES[klass], severity=severity, message=message,
                   evidence=evidence)


def judge_case(case: Case, cand: dict[str, Any] | None, judged: dict[str, Any] | None) \
        -> tuple[SeedResult, list[Finding]]:
    base = {"shape_index": case.shape_index, "seed": case.public_seed, "case": case.label}
    if judged and "reference_error" in judged:
        raise ReferenceFailed(f"case {case.id}: {judged['reference_error']}")
    problems, findings = guard_problems(case, cand)
    if problems:
        return SeedResult(**base, passed=False, message="; ".join(problems)), findings
    if not judged or judged.get("missing"):
        return SeedResult(**base, passed=False, message="no output was saved for this case"), findings
    result = SeedResult(**base, passed=bool(judged["passed"]), max_abs_err=_finite(judged.get("max_abs_err")),
                        max_rel_err=_finite(judged.get("max_rel_err")), worst_index=judged.get("worst_index"),
                        message="; ".join(judged.get("messages", [])))
    findings += [Finding.model_validate(f) for f in judged.get("integrity", [])]
    for size in judged.get("error_size", []):
        findings += error_size_findings(case, size)
    return result, findings


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def guard_problems(case: Case, cand: dict[str, Any] | None) -> tuple[list[str], list[Finding]]:
    if cand is None:
        return ["the candidate's stage ended before this case ran"], []
    if "error" in cand:
        return [f"the candidate raised: {cand['error'].splitlines()[0]}"], []
    problems, findings = [], []
    if "type_error" in cand:
        problems.append(cand["type_error"])
        findings.append(finding("exact_type", 10, cand["type_error"], f"case {case.id}"))
    for msg in cand.get("inputs", []):
        problems.append(msg)
        findings.append(finding("inputs_unchanged", 3, msg, f"case {case.id}"))
    for msg in cand.get("flags", []):
        problems.append(f"backend flag {msg}")
        findings.append(finding("flag_pinning", 14, f"backend flag {msg}", f"case {case.id}"))
    return problems, findings


def error_size_findings(case: Case, size: dict[str, float]) -> list[Finding]:
    """A candidate whose error against fp64 is far larger than the reference's own computes in lower precision."""
    err_c, err_r, eps = size["candidate"], size["reference"], size["eps"]
    ratio = err_c / max(err_r, eps / 64)
    evidence = (f"case {case.id} output {size['output']}: candidate rms error {err_c:.3g}, reference {err_r:.3g} "
                f"(ratio {ratio:.3g}) against an fp64 oracle")
    if err_c <= ERROR_MIN_ULPS * eps:
        return []  # a few units in the last place is rounding, whatever the ratio
    if ratio > ERROR_RATIO_FAIL:
        return [finding("error_size", 14, "error far above the reference's own: the candidate computes in lower "
                        "precision than the problem asks", evidence)]
    if ratio > ERROR_RATIO_WARN:
        return [finding("error_size", 14, "error well above the reference's own", evidence, severity="warning")]
    return []
