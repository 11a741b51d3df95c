"""What a run's outcome is, from what the process did, what the transcript says and what the grader found.

Precedence: a harness failure first (nothing else can be trusted), then integrity (a mutated template or a
grader finding makes the run INVALID whatever else happened), then a provider error that cut the session short
(retried by sweeps when the provider said it was transient), then the grader's verdict on what the agent left,
and when it left nothing: timeout, incomplete session or no solution.
"""

from __future__ import annotations

from typing import Any

from kernelbench.base.models import Finding, Grading, Outcome
from kernelbench.eval.integrity.templates import agent_template_findings as template_findings
from kernelbench.harness.agents.base import AgentReport
from kernelbench.harness.process import ProcessResult

__all__ = ["classify", "template_findings"]


def classify(proc: ProcessResult | None, report: AgentReport | None, grade: Any | None,
             findings: list[Finding], *, has_solution: bool, harness_error: str | None = None) -> Grading:
    """The run's Grading with its outcome and the reasons for it."""
    grading = grade.grading.model_copy(deep=True) if grade is not None else Grading(has_solution=has_solution)
    grading.has_solution = has_solution
    if harness_error:
        return _set(grading, Outcome.HARNESS_ERROR, harness_error)
    if any(f.severity == "error" for f in findings) or grading.outcome is Outcome.INVALID:
        reasons = [f.message for f in findings if f.severity == "error"]
        return _set(grading, Outcome.INVALID, *reasons)
    if report is not None and report.provider_error is not None and not report.complete:
        error = report.provider_error
        return _set(grading, Outcome.PROVIDER_ERROR,
                    f"provider error ({'retryable' if error.retryable else 'not retryable'}, from {error.source}): "
                    f"{error.message}")
    if grade is not None:
        if proc is not None and proc.timed_out:
            grading.reasons.append("the agent ran out of its time budget; what it left was graded")
        return grading
    if proc is not None and proc.timed_out:
        return _set(grading, Outcome.TIMEOUT, f"the budget ran out after {proc.elapsed_s:.0f} s with no solution.py")
    if proc is not None and proc.flooded:
        return _set(grading, Outcome.INCOMPLETE_SESSION, "the agent was stopped: its output passed the size limit")
    if report is not None and not report.complete:
        return _set(grading, Outcome.INCOMPLETE_SESSION,
                    f"the session did not finish (exit code {proc.exit_code if proc else None}) and left no "
                    "solution.py")
    return _set(grading, Outcome.NO_SOLUTION, "the agent finished without writing solution.py")


def _set(grading: Grading, outcome: Outcome, *reasons: str) -> Grading:
    grading.outcome = outcome
    grading.reasons = [*reasons, *[r for r in grading.reasons if r not in reasons]]
    return grading
