"""The one template-file check (class 12): files a solution or an agent must not edit, compared with their bytes
from before, each change described with a unified diff and reported as a `template_hash` finding.

Two callers: the grader watches the problem's files and the workspace copies beside the solution while it grades
(`grading_template_findings`: a workspace copy changed is the candidate's doing, an error, and is put back; the
source problem folder is only ever read, so a change there is reported as a warning and left as found), and the
harness compares an agent's workspace with its pristine copy after the session (`agent_template_findings`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernelbench.base.catalogue import Severity, finding
from kernelbench.base.models import Finding

CHECK = "template_hash"
MAX_DIFF_CHARS = 20_000


@dataclass(frozen=True)
class TemplateChange:
    path: str                    # as reported: a workspace-relative path, or the file's own path
    kind: Literal["modified", "deleted", "created"]
    diff: str = ""               # unified diff against the bytes from before (empty when deleted)


def unified_diff(before: bytes, after: bytes, label: str) -> str:
    try:
        old = before.decode("utf-8").splitlines(keepends=True)
        new = after.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return f"{label}: binary content changed"
    text = "".join(difflib.unified_diff(old, new, f"a/{label}", f"b/{label}"))
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n… (diff truncated)\n"


def file_change(path: Path, before: bytes | None, label: str) -> TemplateChange | None:
    """How the file at `path` differs from `before` (None: it did not exist), or None when it is unchanged."""
    now = path.read_bytes() if path.is_file() else None
    if now == before:
        return None
    if now is None:
        return TemplateChange(label, "deleted")
    if before is None:
        return TemplateChange(label, "created")
    return TemplateChange(label, "modified", unified_diff(before, now, label))


@dataclass
class Snapshot:
    """The bytes of each watched file before grading (None: the file did not exist)."""

    files: dict[Path, bytes | None]

    @classmethod
    def take(cls, paths: list[Path]) -> Snapshot:
        return cls({Path(p): Path(p).read_bytes() if Path(p).is_file() else None for p in paths})

    def changes(self) -> dict[Path, TemplateChange]:
        found = {path: file_change(path, before, str(path)) for path, before in self.files.items()}
        return {path: change for path, change in found.items() if change is not None}

    def restore(self, path: Path) -> None:
        """Put one watched file back exactly as it was (a file created since is removed)."""
        content = self.files[path]
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)


def template_finding(change: TemplateChange, message: str, severity: Severity = "error") -> Finding:
    return finding(CHECK, 12, message, change.diff or f"{change.path} {change.kind}", severity=severity,
                   file=change.path)


def grading_template_findings(before: Snapshot, folder: Path) -> list[Finding]:
    """The grader's rule, after a grading: a change in the source problem folder is a warning (grading used copies
    taken before it started; the folder is left as found), a changed workspace copy an error, and put back."""
    findings = []
    for path, change in before.changes().items():
        if path.parent == folder:
            findings.append(template_finding(change, f"the problem's {path.name} was {change.kind} while it was "
                                             "graded (grading used the copy taken before; the folder was left as "
                                             "found)", severity="warning"))
            continue
        before.restore(path)
        findings.append(template_finding(change, f"{path.name} was {change.kind} during grading (restored)"))
    return findings


def agent_template_findings(changes: list[TemplateChange]) -> list[Finding]:
    """The harness's rule, after a session: every template file the agent changed or deleted is an error."""
    return [template_finding(change, f"the agent {change.kind} the template file {change.path}")
            for change in changes]
