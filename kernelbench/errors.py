"""User-facing errors and build diagnostics.

Every error a person can fix names the file (and line where there is one) and says what to do. The CLI prints
`KernelBenchError` without a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelbench.text import visible


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in an input: where it is, what is wrong, and what to do about it."""

    path: Path | str | None
    message: str
    line: int | None = None
    hint: str | None = None
    severity: str = "error"  # error | warning

    def location(self) -> str:
        if self.path is None:
            return "<input>"
        path = visible(str(self.path))  # a file name may hold terminal escapes: shown, never acted on
        return f"{path}:{self.line}" if self.line else path

    def __str__(self) -> str:
        # an error about an option or the machine has no file to name
        message = visible(self.message, lines=True)
        text = message if self.path is None else f"{self.location()}: {message}"
        return f"{text}\n  → {visible(self.hint, lines=True)}" if self.hint else text


class KernelBenchError(Exception):
    """An error caused by input or environment that the user can fix; printed without a traceback."""

    def __init__(self, message: str, *, path: Path | str | None = None, line: int | None = None,
                 hint: str | None = None):
        self.diagnostic = Diagnostic(path=path, message=message, line=line, hint=hint)
        super().__init__(str(self.diagnostic))

    @classmethod
    def from_diagnostic(cls, diag: Diagnostic) -> "KernelBenchError":
        return cls(diag.message, path=diag.path, line=diag.line, hint=diag.hint)
