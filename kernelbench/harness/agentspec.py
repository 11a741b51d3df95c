"""`HARNESS:MODEL[@EFFORT]`: which agent CLI runs, with which model and reasoning effort."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelbench.errors import KernelBenchError

_HARNESS_RE = re.compile(r"^[a-z0-9-]+$")


@dataclass(frozen=True)
class AgentSpec:
    harness: str
    model: str
    effort: str | None = None

    @classmethod
    def parse(cls, text: str) -> "AgentSpec":
        harness, sep, rest = str(text).strip().partition(":")
        if not sep or not harness or not rest:
            raise KernelBenchError(f"agent '{text}' is not HARNESS:MODEL[@EFFORT]",
                                   hint="for example claude:claude-opus-4-7@max or scripted:eager")
        if not _HARNESS_RE.match(harness):
            raise KernelBenchError(f"harness name '{harness}' may only hold a-z, 0-9 and '-'",
                                   hint="use the adapter's name: claude, codex, kimi, opencode, gemini, cursor, "
                                        "scripted")
        model, at, effort = rest.rpartition("@") if "@" in rest else (rest, "", "")
        if at and (not model or not effort):
            raise KernelBenchError(f"agent '{text}': '@' must sit between a model and an effort",
                                   hint="for example codex:gpt-5.5@high")
        return cls(harness=harness, model=model, effort=effort or None)

    def __str__(self) -> str:
        return f"{self.harness}:{self.model}" + (f"@{self.effort}" if self.effort else "")

    @property
    def slug(self) -> str:
        """The model part of a run id: lower case, no path separators or underscores (they delimit the id)."""
        text = self.model + (f"-{self.effort}" if self.effort else "")
        return re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-") or "model"
