"""Failures that are the grader's, never the candidate's, and how a stage describes an exception (stdlib only: a
stage process imports this before anything that could fail to load).

A `GraderFault` ends a grading as a harness error with its reason, never a pass or a fail: a guard that cannot be
loaded (`GuardUnavailable`) or raised while it ran (`GuardFailed`), a candidate stage that failed before any
candidate code was imported.
"""

from __future__ import annotations

import traceback


class GraderFault(Exception):
    """The grading could not be carried out as designed; the message says what failed and why."""


class GuardUnavailable(GraderFault):
    def __init__(self, what: str, exc: BaseException):
        super().__init__(f"the integrity guards could not be loaded ({what}): {type(exc).__name__}: {exc}")


class GuardFailed(GraderFault):
    """A guard raised on input the grading had accepted (an output the comparison passed, a solution file)."""

    def __init__(self, guard: str, exc: BaseException | str):
        why = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        super().__init__(f"the {guard} guard could not run: {why}")


def describe(exc: BaseException) -> str:
    """An exception as a stage's reply keeps it: its type and message, then the tail of its traceback."""
    tail = "".join(traceback.format_exception(exc)[-6:])
    return f"{type(exc).__name__}: {exc}\n{tail}"[:4000]
