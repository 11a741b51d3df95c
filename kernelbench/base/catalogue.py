"""The sixteen exploit classes of docs/integrity.md, and the one helper that builds a Finding for any of them.

Every guard names its class by number; the name shown beside it comes from here, so a class is spelt the same in
check.log, result.json and the site.
"""

from __future__ import annotations

from typing import Literal

from kernelbench.base.models import Finding

CLASS_NAMES: dict[int, str] = {
    1: "library bypass",
    2: "stale memory",
    3: "input mutation",
    4: "degenerate output",
    5: "partial computation",
    6: "seed or shape overfitting",
    7: "memoisation",
    8: "environment sniffing",
    9: "side streams",
    10: "lazy outputs",
    11: "in-process tampering",
    12: "grader exit / file edits",
    13: "L2 persistence",
    14: "precision downgrade",
    15: "aggregate gaming",
    16: "invalid launches",
}

Severity = Literal["error", "warning", "info"]


def finding(check: str, klass: int, message: str, evidence: str = "", *, severity: Severity = "error",
            file: str | None = None, line: int | None = None) -> Finding:
    """A Finding of guard `check` for exploit class `klass`, its name filled in from the catalogue."""
    return Finding(check=check, klass=klass, class_name=CLASS_NAMES[klass], severity=severity,
                   message=message, evidence=evidence, file=file, line=line)


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)
