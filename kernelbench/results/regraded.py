"""A regraded cell against what its own benchmark published: the two verdicts, and why they disagree.

Pure functions over RunResult (its `provenance` holds the published side), shared by `kernelbench regrade`'s
summary and the site's diff page."""

from __future__ import annotations

import math

import re
from dataclasses import dataclass
from functools import partial

from kernelbench.base.models import Ceiling, InputProtocol
from kernelbench.results.run import RunResult, Status

# the words a grading reports running out of (GPU) memory in: failure_kind's "out of memory", and the regrade's rule
# that such a failure beside another grading on the same GPU is graded again alone (kernelbench.harness.regrade)
OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError", re.IGNORECASE)

# what stopped a solution from being graded at all, by the words its error is reported in (first match wins)
FAILURE_KINDS: tuple[tuple[str, re.Pattern], ...] = (
    ("no solution file", re.compile(r"no solution file", re.IGNORECASE)),
    ("grader error", re.compile(r"grading aborted|the reference failed", re.IGNORECASE)),
    ("missing package", re.compile(r"ModuleNotFoundError|No module named", re.IGNORECASE)),
    ("out of memory", OUT_OF_MEMORY),
    ("compiled for another architecture", re.compile(
        r"no kernel image is available|sm_1[02]0|unsupported gpu architecture|invalid device function|"
        r"PTX was compiled with an unsupported toolchain", re.IGNORECASE)),
    ("needs CUDA", re.compile(r"not compiled with CUDA|no NVIDIA driver|CUDA driver|cuda.*not available|CUDA_HOME|"
                              r"cpu tensor\?", re.IGNORECASE)),
    ("hangs", re.compile(r"exceeded its limit", re.IGNORECASE)),
    ("compile error", re.compile(r"CalledProcessError|error building extension|CompilationError|ninja", re.IGNORECASE)),
    ("does not import", re.compile(r"check stage failed|SyntaxError|ImportError|defines no class", re.IGNORECASE)),
    ("runtime error", re.compile(r"the candidate raised", re.IGNORECASE)),
)


def failure_kind(result: RunResult) -> str | None:
    """Why the solution could not be judged on its numbers (None: it ran, and its outputs were judged)."""
    text = "\n".join(result.grading.reasons)
    for kind, pattern in FAILURE_KINDS:
        if pattern.search(text):
            return kind
    return None


def out_of_memory_reason(result: RunResult) -> str | None:
    """The first of the grading's reasons that reports running out of memory (None: none does)."""
    return next((reason for reason in result.grading.reasons if OUT_OF_MEMORY.search(reason)), None)


@dataclass(frozen=True)
class Disagreement:
    """One regraded cell: the published verdict and ours, and the reason where they differ."""

    run_id: str
    agent: str
    problem: str
    published: str           # PASS | FAIL | ERR
    ours: str                # PASS | FAIL | ERR | INVALID
    published_peak: float | None
    our_peak: float | None
    agrees: bool
    kind: str                # agree | integrity | correctness | failure | fixed (published FAIL, ours PASS)
    reason: str              # our integrity finding, the worst element, or the error; "" when they agree
    evidence: str = ""
    classes: tuple[int, ...] = ()
    # our peak had the calls been timed on the same tensors and values every call (most published boards' input
    # protocol), and on new tensors every call; None where the shapes were not timed under that protocol
    peak_same_inputs: float | None = None
    peak_new_tensors: float | None = None
    adaptations: tuple[str, ...] = ()       # how the published file was set up (unpacked, CUTLASS provided)
    # the roofs the two peak fractions are shares of (None where unknown, or where the two are of different kinds)
    published_ceiling: Ceiling | None = None
    our_ceiling: Ceiling | None = None
    own_checker: str | None = None  # their own checker's verdict here (PASS | FAIL | error), where it was run
    own_checker_line: str = ""      # the line of its output that gives the verdict's reason ("FAIL: shape 0 ...")
    # how many of the published harness's own stress cases (numeric and generated property cases) our grading
    # checked: 0 for gradings made before the adapter drew them, so a dispute with their checker can say whether
    # our PASS ever met the case their checker failed
    their_cases_checked: int = 0
    # the peak fraction their own timing script gave here (kernelbench regrade --own-benchmark): their timer, their
    # input protocol and their roof, on this GPU
    their_benchmark_peak: float | None = None
    correct: bool | None = None   # our grading right on the published shapes (Grading.correct)
    # our grading on the held-out shapes (docs/grading.md, "Held-out cases"), apart from the verdict on the published
    # ones: True right, False wrong, None not judged (`held_out_note` says why: the published shapes failed, none
    # declared, turned off)
    held_out: bool | None = None
    held_out_note: str = ""
    held_out_cases: int = 0
    held_out_passed: int = 0

    @property
    def peak_ratio(self) -> float | None:
        return _ratio(self.our_peak, self.published_peak)

    # A peak gap, ours / published, is the product of three parts a reader can check:
    #   ceiling_factor  their roof / ours: the ratio the same absolute speed would give;
    #   protocol_factor our peak / our peak on the same inputs every call (the published boards' protocol);
    #   speed_factor    what is left: the kernel's absolute speed here against the published one under the same
    #                   protocol (the two GPUs' real speeds, the two timers, the runs' noise).
    @property
    def ceiling_factor(self) -> float | None:
        theirs, ours = self.published_ceiling, self.our_ceiling
        if theirs is None or ours is None or theirs.unit != ours.unit:
            return None
        return theirs.value / ours.value

    @property
    def protocol_factor(self) -> float | None:
        return _ratio(self.our_peak, self.peak_same_inputs)

    # Where their own timing script ran here, the same gap splits another way, by who changed:
    #   machine_factor  theirs here / published: their timer and roof, only the machine differs;
    #   grader_factor   ours / theirs here: the same machine, only the grader differs (its timer, input protocol
    #                   and roof).
    @property
    def machine_factor(self) -> float | None:
        return _ratio(self.their_benchmark_peak or None, self.published_peak)

    @property
    def grader_factor(self) -> float | None:
        return _ratio(self.our_peak, self.their_benchmark_peak)

    @property
    def speed_factor(self) -> float | None:
        """The part left (see above); where the grading timed no same-inputs loop (older gradings), it holds the
        input protocol's part too."""
        ratio, ceiling = self.peak_ratio, self.ceiling_factor
        if ratio is None or ratio <= 0 or ceiling is None:
            return None
        return ratio / (ceiling * (self.protocol_factor or 1.0))


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None where either is unknown (or the denominator is zero)."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def their_cases_checked(result: RunResult) -> int:
    """The checks of a grading that ran one of the published harness's own stress cases: a numeric case
    ("stress:<name>") or a property case other than extra seeds of the base distribution ("property:<Case>(...)",
    not "property:base@<n>"; kernelbench.problems.layouts.kbh_stress names them)."""
    return sum(1 for check in result.grading.checks
               if check.case.startswith("stress:")
               or (check.case.startswith("property:") and not check.case.startswith("property:base")))


def reason_line(output: str, limit: int = 400) -> str:
    """The line of a checker's output that says why it failed (its first FAIL line), else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    line = next((line for line in lines if line.startswith("FAIL")), lines[-1] if lines else "")
    return line[:limit]


def compare(result: RunResult) -> Disagreement:
    """Our grading of a regraded cell against its published verdict (the result must carry provenance)."""
    provenance = result.provenance
    if provenance is None:
        raise ValueError(f"{result.run_id} was not regraded from a published board (no provenance)")
    ours, published = result.status.value, provenance.published_status
    errors = [f for f in result.integrity if f.severity == "error"]
    disagreement = partial(
        Disagreement, run_id=result.run_id, agent=result.agent, problem=result.problem, published=published,
        ours=ours, published_peak=provenance.published_peak_fraction, our_peak=result.grading.peak_fraction,
        peak_same_inputs=peak_under(result, "same"), peak_new_tensors=peak_under(result, "tensors"),
        adaptations=tuple(provenance.adaptations), published_ceiling=provenance.published_ceiling,
        our_ceiling=result.grading.ceiling,
        own_checker=provenance.own_checker.outcome if provenance.own_checker else None,
        own_checker_line=reason_line(provenance.own_checker.output_tail) if provenance.own_checker else "",
        their_cases_checked=their_cases_checked(result),
        their_benchmark_peak=provenance.own_benchmark.peak_fraction if provenance.own_benchmark else None,
        **held_out_fields(result))
    if ours == published:
        return disagreement(agrees=True, kind="agree", reason="")
    if ours == Status.INVALID.value and errors:
        first = errors[0]
        return disagreement(agrees=False, kind="integrity",
                            reason=f"class {first.klass} ({first.class_name}): {first.message}",
                            evidence=first.evidence, classes=tuple(sorted({f.klass for f in errors if f.klass})))
    kind = failure_kind(result)
    reason = "; ".join(result.grading.reasons) or result.grading.outcome.value
    if kind is not None:
        return disagreement(agrees=False, kind="failure", reason=f"{kind}: {reason}")
    if ours == Status.PASS.value:
        return disagreement(agrees=False, kind="fixed",
                            reason=f"passes every check here; published {published}")
    return disagreement(agrees=False, kind="correctness", reason=reason)


def held_out_fields(result: RunResult) -> dict:
    """A regraded cell's held-out result, as the diff page shows it beside the published shapes' verdict."""
    held = result.grading.held_out
    if held is None:
        return {"correct": result.grading.correct, "held_out": None,
                "held_out_note": "no held-out shapes declared for this problem"}
    return {"correct": result.grading.correct, "held_out": held.correct, "held_out_note": held.note,
            "held_out_cases": len(held.checks), "held_out_passed": held.passed}


def peak_under(result: RunResult, protocol: InputProtocol) -> float | None:
    """The grading's peak fraction with each shape's median taken under another input protocol: a shape's
    fraction scales with 1 / its median (the roofline's work and bytes are fixed per shape); geometric mean over
    the shapes, as the score is. None unless every scored shape was timed under it."""
    fractions = []
    for shape in result.grading.shapes:
        if shape.fraction is None or not shape.median_ms:
            continue
        other = shape.protocols.get(protocol)
        if other is None or other.median_ms <= 0:
            return None
        fractions.append(shape.fraction * shape.median_ms / other.median_ms)
    if not fractions or result.grading.peak_fraction is None:
        return None
    return math.exp(sum(math.log(f) for f in fractions) / len(fractions))


def published_status(correct: bool, has_solution: bool) -> Status:
    """A published KernelBench-Hard cell's status: correct → PASS; a solution → FAIL; none → ERR."""
    if correct:
        return Status.PASS
    return Status.FAIL if has_solution else Status.ERR
