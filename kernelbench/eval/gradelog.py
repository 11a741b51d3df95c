"""The grading's two logs, check.log and benchmark.log: what each stage did, in words, beside result.json's
numbers. Only the grader writes them; a stage's own output is quoted, marked as ignored."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelbench.base.models import Finding, SeedResult, ShapeResult
from kernelbench.eval.cases import Case
from kernelbench.eval.process import StageRun
from kernelbench.eval.protocol import ShapeTiming


@dataclass
class GradingLog:
    check: list[str] = field(default_factory=list)
    bench: list[str] = field(default_factory=list)

    def stage(self, run: StageRun) -> None:
        """A stage's end, its output (ignored by the grader) and its error, in the log of its part."""
        log = self.bench if run.role == "bench" else self.check
        log.append(f"[{run.role} stage: {run.elapsed_s:.1f} s, exit {run.returncode}]")
        if run.output.strip():
            log.append(f"[{run.role} stage output, ignored by the grader]\n{run.output.rstrip()}")
        if run.error:
            log.append(f"[{run.role} stage] {run.error}")

    def findings(self, label: str, found: list[Finding]) -> None:
        self.check += [finding_line(label, f) for f in found]

    def check_text(self, stages: dict[str, float]) -> str:
        seconds = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
        return "\n".join(self.check) + "\n" + f"[stage seconds] {seconds}\n"

    def bench_text(self) -> str:
        return "\n".join(self.bench) + "\n"


def finding_line(label: str, f: Finding) -> str:
    return f"[{label}] {f.severity.upper()} class {f.klass}: {f.message} ({f.evidence})"


def case_line(case: Case, result: SeedResult) -> str:
    status = "PASS" if result.passed else "FAIL"
    err = f" max_abs_err={result.max_abs_err:.3g}" if result.max_abs_err is not None else ""
    return (f"{status} shape {case.shape_index} {case.shape} {case.label} seed {case.public_seed}{err}"
            + (f"\n    {result.message}" if result.message else ""))


def shape_line(result: ShapeResult, timing: ShapeTiming) -> str:
    parts = [f"shape {result.index} {result.shape}: median {result.median_ms:.4g} ms, IQR {result.spread_ms:.3g} ms "
             f"over {len(result.samples_ms)} trials ({result.timing_method})"]
    if result.tflops is not None:
        parts.append(f"{result.tflops:.4g} TFLOP/s")
    if result.gbps is not None:
        parts.append(f"{result.gbps:.4g} GB/s")
    if result.fraction is not None:
        parts.append(f"{100 * result.fraction:.2f}% of ceiling")
    if timing.sync_overhead_ms:
        parts.append(f"sync overhead {timing.sync_overhead_ms * 1e3:.1f} us")
    if result.host_bound_samples:
        parts.append(f"{result.host_bound_samples} of {len(result.samples_ms)} calls host-bound (the host's "
                     f"median {result.host_median_ms * 1e3:.1f} us to issue one, not counted)"
                     if result.host_median_ms is not None else
                     f"{result.host_bound_samples} of {len(result.samples_ms)} calls host-bound")
    parts.append(f"memo probe {timing.memo_probe}")
    line = ", ".join(parts)
    compared = protocol_line(result)
    return line + ("\n    " + compared if compared else "")


def protocol_line(result: ShapeResult) -> str:
    """The shape's median under each input protocol timed, beside the score's."""
    if len(result.protocols) < 2:
        return ""
    names = {"buffers": "new values, same tensors", "tensors": "new tensors", "same": "same tensors and values"}
    parts = [f"{names.get(name, name)} {p.median_ms * 1e3:.1f} us ({p.samples} calls, {p.method})"
             + (" [score]" if name == result.protocol else "")
             for name, p in result.protocols.items()]
    return "input protocols: " + "; ".join(parts)


def timing_notes(index: int, timing: ShapeTiming) -> list[str]:
    """What the timing loop noted about a shape, and how many of its calls the audit recorded."""
    lines = [f"shape {index}: {note}" for note in timing.notes]
    if timing.audited_calls is not None:
        lines.append(f"shape {index}: {timing.audited_calls} timed calls audited by kernel name "
                     f"(recorder: {timing.audit_recorder}), left out of the samples")
    return lines
