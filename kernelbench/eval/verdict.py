"""The trusted side of correctness: the parent compares what the candidate's process saved with what the
reference's process saved, and turns guard records into SeedResults and integrity findings."""

from __future__ import annotations

import math
from pathlib import Path
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


def finding(check: str, klass: int, message: str, evidence: str = "", severity: str = "error") -> Finding:
    return Finding(check=check, klass=klass, class_name=CLASS_NAMES[klass], severity=severity, message=message,
                   evidence=evidence)


def load_saved(path: Path, device: str):
    import torch

    data = torch.load(path, weights_only=True, map_location=device)
    return data["outputs"][0] if data["single"] else tuple(data["outputs"])


def judge_case(case: Case, cand: dict[str, Any] | None, ref: dict[str, Any] | None, dirs: dict[str, Path],
               ctx: dict[str, Any]) -> tuple[SeedResult, list[Finding]]:
    """One case: guard records first, then values."""
    base = {"shape_index": case.shape_index, "seed": case.public_seed, "case": case.label}
    if ref is None or "error" in ref or "type_error" in ref:
        why = (ref or {}).get("error") or (ref or {}).get("type_error") or "the reference stage gave no result"
        return SeedResult(**base, passed=False, message=f"reference failed on this case: {why}"), []
    problems, findings = _guard_problems(case, cand, ctx)
    if problems:
        return SeedResult(**base, passed=False, message="; ".join(problems)), findings
    out = load_saved(dirs["check"] / f"out_{case.id}.pt", ctx["compare_device"])
    expected = load_saved(dirs["reference"] / f"expected_{case.id}.pt", ctx["compare_device"])
    comparison = ctx["compare"](out, expected, case)
    result = SeedResult(**base, passed=comparison.ok, max_abs_err=_finite(comparison.max_abs_err),
                        max_rel_err=_finite(comparison.max_rel_err), worst_index=comparison.worst_index,
                        message="; ".join(comparison.messages))
    if comparison.ok and case.oracle and ref.get("oracle") == "ok":
        findings += error_size_findings(case, out, expected, load_saved(dirs["reference"] / f"oracle_{case.id}.pt",
                                                                        ctx["compare_device"]))
    return result, findings


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _guard_problems(case: Case, cand: dict[str, Any] | None, ctx: dict[str, Any]) -> tuple[list[str], list]:
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
    wrong_device = [d for d in cand.get("devices", []) if d != ctx["device"]]
    if wrong_device:
        problems.append(f"output on {wrong_device[0]}, expected {ctx['device']}")
    return problems, findings


def relative_rms(a, b) -> float:
    import torch

    a64, b64 = a.double(), b.double()
    mask = torch.isfinite(a64) & torch.isfinite(b64)
    denom = float(b64[mask].pow(2).mean().sqrt()) if bool(mask.any()) else 0.0
    return float((a64 - b64)[mask].pow(2).mean().sqrt()) / denom if denom > 0 else 0.0


def error_size_findings(case: Case, out, expected, oracle) -> list[Finding]:
    """A candidate whose error against fp64 is far larger than the reference's own computes in lower precision."""
    import torch

    outs = (out,) if isinstance(out, torch.Tensor) else out
    exps = (expected,) if isinstance(expected, torch.Tensor) else expected
    oras = (oracle,) if isinstance(oracle, torch.Tensor) else oracle
    findings = []
    for i, (o, e, r) in enumerate(zip(outs, exps, oras)):
        if not e.is_floating_point() or o.shape != r.shape:
            continue
        eps = torch.finfo(e.dtype).eps
        err_c, err_r = relative_rms(o, r), relative_rms(e, r)
        ratio = err_c / max(err_r, eps / 64)
        evidence = (f"case {case.id} output {i}: candidate rms error {err_c:.3g}, reference {err_r:.3g} "
                    f"(ratio {ratio:.3g}) against an fp64 oracle")
        if ratio > ERROR_RATIO_FAIL and err_c > ERROR_MIN_ULPS * eps:
            findings.append(finding("error_size", 14, "error far above the reference's own: the candidate "
                                    "computes in lower precision than the problem asks", evidence))
        elif ratio > ERROR_RATIO_WARN:
            findings.append(finding("error_size", 14, "error well above the reference's own", evidence,
                                    severity="warning"))
    return findings
