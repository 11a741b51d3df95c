"""Launch audit: the names of what actually ran (profiler kernel names on GPU, aten op names on CPU) against
the problem's forbidden libraries. Whatever trick hid the call from the lint, the kernel still has a name."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kernelbench.eval.integrity.catalogue import finding
from kernelbench.eval.integrity.numerics import library_sum_check
from kernelbench.eval.integrity.rules import Rules, rules_for_spec
from kernelbench.results.run import Finding

CHECK = "launch_audit"
KAHAN_CHECKS = {"kahan_row_sum", "kahan"}


def launch_audit(kernel_names: Iterable[str], spec) -> list[Finding]:
    """One error finding per forbidden kernel or aten op among `kernel_names` (counted, first name quoted); for a
    Kahan problem also per uncompensated library sum (torch's fp32 reductions, scans, BLAS)."""
    names = list(kernel_names)
    findings = audit_names(names, rules_for_spec(spec))
    if set(getattr(spec, "leak_checks", []) or []) & KAHAN_CHECKS:
        findings += library_sum_check(names)
    return findings


def audit_names(names: Iterable[str], rules: Rules) -> list[Finding]:
    counts = Counter(n for n in names if n)
    hits: dict[str, tuple[str, int]] = {}
    for name, count in counts.items():
        why = forbidden_launch_reason(name, rules)
        if why:
            first, total = hits.get(why, (name, 0))
            hits[why] = (first, total + count)
    return [finding(CHECK, 1, f"a forbidden library ran during the candidate's forward: {why}",
                    evidence=f"kernel {first[:200]!r} launched {total}x") for why, (first, total) in hits.items()]


def forbidden_launch_reason(name: str, rules: Rules) -> str | None:
    if name.startswith("aten::"):
        leaf = name[len("aten::"):].split(".")[0]
        return f"aten::{leaf} ({rules.leaves[leaf]})" if leaf in rules.leaves else None
    lowered = name.lower()
    for text, case_sensitive, why in rules.kernel_patterns:
        if (text in name) if case_sensitive else (text.lower() in lowered):
            return f"{text} ({why})"
    return None
