"""Launch audit: the names of what actually ran (profiler kernel names on GPU, aten op names on CPU) against
the problem's forbidden libraries. Whatever trick hid the call from the lint, the kernel still has a name."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding
from kernelbench.eval.integrity.numerics import KAHAN_CHECKS, LIBRARY_CHECK, uncompensated_library_sum
from kernelbench.eval.integrity.profiling import PROBLEM_CODE_PREFIX
from kernelbench.eval.integrity.rules import Rules, rules_for_spec

CHECK = "launch_audit"


def launch_audit(kernel_names: Iterable[str], spec, own: Callable[[str], bool] | None = None) -> list[Finding]:
    """One error finding per forbidden kernel or aten op among `kernel_names` (counted, first name quoted); for a
    Kahan problem also per uncompensated library sum (torch's fp32 reductions, scans, BLAS). `own(name)`: the
    kernel was compiled from the solution's own sources (integrity.machine_code), so a name that looks like a
    library's (`flash_fwd`, a CUTLASS template's) is the solution's work, not a library call."""
    times = dict(kernel_names) if isinstance(kernel_names, Mapping) else None
    names = list(kernel_names)
    if own is not None:
        names = [n for n in names if n.startswith("aten::") or n.startswith(PROBLEM_CODE_PREFIX) or not own(n)]
    findings = audit_names(names, rules_for_spec(spec), times)
    if set(getattr(spec, "leak_checks", []) or []) & KAHAN_CHECKS:
        findings += [finding(LIBRARY_CHECK, 14, f"the forward ran a library sum without compensation ({why}): a "
                             "Kahan problem's normaliser must be accumulated with compensation or in float64",
                             evidence=f"kernel {first[:200]!r} launched {total}x")
                     for why, (first, total) in _hits(names, uncompensated_library_sum).items()]
    return findings


def seen_in(findings: list[Finding], where: str) -> list[Finding]:
    """Findings of an audit run on other calls than the checked ones, saying which (the timed calls, the call the
    counter pass measured)."""
    return [f.model_copy(update={"message": f"{f.message} ({where})"}) for f in findings]


def audit_names(names: Iterable[str], rules: Rules, times: Mapping[str, float] | None = None) -> list[Finding]:
    """`times` (name -> recorded device time, where known): the evidence gives the refused kernels' share of it."""
    names = list(names)
    found = []
    for why, (first, total) in _hits(names, lambda name: forbidden_launch_reason(name, rules)).items():
        evidence = f"kernel {first[:200]!r} launched {total}x"
        if times:
            refused = [n for n in names if forbidden_launch_reason(n, rules) == why]
            whole = sum(t for n, t in times.items() if not n.startswith("aten::")) or 0.0
            mine = sum(times.get(n, 0.0) for n in refused if not n.startswith("aten::"))
            if whole > 0 and mine > 0:
                evidence += (f"; {len(refused)} such kernel(s) carry {mine / whole:.0%} of the recorded device time "
                             f"({mine:.1f} of {whole:.1f} us)")
        found.append(finding(CHECK, 1, f"a forbidden library ran during the candidate's forward: {why}",
                             evidence=evidence))
    return found


def _hits(names: Iterable[str], reason: Callable[[str], str | None]) -> dict[str, tuple[str, int]]:
    """Launched names grouped by the reason they are refused: the first name seen and the launch count."""
    hits: dict[str, tuple[str, int]] = {}
    for name, count in Counter(n for n in names if n).items():
        why = reason(name)
        if why:
            first, total = hits.get(why, (name, 0))
            hits[why] = (first, total + count)
    return hits


def forbidden_launch_reason(name: str, rules: Rules) -> str | None:
    if name.startswith(PROBLEM_CODE_PREFIX):
        return f"the problem's own code ({name[len(PROBLEM_CODE_PREFIX):].split(':')[0]}) ran inside the forward"
    if name.startswith("aten::"):
        leaf = name[len("aten::"):].split(".")[0]
        return f"aten::{leaf} ({rules.leaves[leaf]})" if leaf in rules.leaves else None
    lowered = name.lower()
    for text, case_sensitive, why in rules.kernel_patterns:
        if (text in name) if case_sensitive else (text.lower() in lowered):
            return f"{text} ({why})"
    return _compiled_op_reason(name, rules)


# torch.compile's generated kernels are named after the aten ops fused into them (triton_per_fused__softmax_0,
# cpp_fused__softmax__to_copy_0): a forbidden op laundered through the compiler still shows in the name, unless
# the compiler decomposed it first
INDUCTOR_KERNEL = re.compile(r"^(?:cpp_fused|triton_(?:poi|per|red|tem|for|mix)_fused)_(?P<ops>\w+?)_\d+$")


def _compiled_op_reason(name: str, rules: Rules) -> str | None:
    match = INDUCTOR_KERNEL.match(name.split("(")[0].strip())
    if not match:
        return None
    ops = "_" + match.group("ops") + "_"
    for leaf, why in rules.leaves.items():
        token = leaf.strip("_")
        if len(token) >= 2 and f"_{token}_" in ops:
            return f"aten::{leaf} compiled by torch.compile into {name[:80]} ({why})"
    return None
