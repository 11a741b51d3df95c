"""Edits as unified diffs, whatever shape the log recorded them in."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

RARE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"   # line ends other than "\n" (str.splitlines' list)


def has_rare_breaks(text: str) -> bool:
    """Whether any line ends in `text` other than "\n": one substring test per kind of break, which scans at
    memory speed, where a regular expression's character class walks the text a character at a time."""
    return ("\r" in text or "\x0b" in text or "\x0c" in text or "\x1c" in text or "\x1d" in text or "\x1e" in text
            or "\x85" in text or "\u2028" in text or "\u2029" in text)


def header(path: str, *, created: bool = False, deleted: bool = False) -> str:
    old = "/dev/null" if created else f"a/{path.lstrip('/')}"
    new = "/dev/null" if deleted else f"b/{path.lstrip('/')}"
    return f"--- {old}\n+++ {new}\n"


def from_strings(path: str, old: str, new: str) -> str:
    """Diff of an old/new pair (an Edit tool's oldString/newString, or a before/after body)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{path.lstrip('/')}", tofile=f"b/{path.lstrip('/')}", n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def from_creation(path: str, content: str) -> str:
    if not content or has_rare_breaks(content):
        lines = content.splitlines()
        count, body = len(lines), "".join(f"+{line}\n" for line in lines)
        return header(path, created=True) + f"@@ -0,0 +1,{count} @@\n" + body
    # lines end only at "\n": every line end but a final one is prefixed in one pass, and the diff is joined
    # once (a created file is the largest text of most edits: each concatenation copied all of it again)
    breaks = content.count("\n")
    ends = content.endswith("\n")
    count = breaks if ends else breaks + 1
    body = content.replace("\n", "\n+", breaks - 1 if ends else breaks)
    return "".join((header(path, created=True), f"@@ -0,0 +1,{count} @@\n+", body, "" if ends else "\n"))


def from_hunks(path: str, hunks: Iterable[dict[str, Any]]) -> str:
    """Claude Code's `structuredPatch`: [{oldStart, oldLines, newStart, newLines, lines}]."""
    parts = [header(path)]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        parts.append(f"@@ -{hunk.get('oldStart', 0)},{hunk.get('oldLines', 0)} "
                     f"+{hunk.get('newStart', 0)},{hunk.get('newLines', 0)} @@\n")
        lines = hunk.get("lines") or []
        try:
            parts.append("\n".join(lines) + "\n" if lines else "")
        except TypeError:                   # a line that is not a string: skipped, as before
            parts.extend(f"{line}\n" for line in lines if isinstance(line, str))
    return "".join(parts)


FILE_MARKERS = (("*** Update File: ", False, False), ("*** Add File: ", True, False), ("*** Delete File: ", False, True))


def from_apply_patch(patch: str) -> list[tuple[str, str]]:
    """Codex's `*** Begin Patch` envelope → [(path, unified diff)], one per file it touches."""
    edits: list[tuple[str, list[str]]] = []
    lines: list[str] | None = None        # the current file's diff, line by line (joined once at the end)
    for line in patch.splitlines():
        if line[:3] == "***":             # markers are rare: most lines are hunk lines, checked once each
            if line.startswith(("*** Begin Patch", "*** End Patch")) or line == "*** End of File":
                continue
            marker = next((m for m in FILE_MARKERS if line.startswith(m[0])), None)
            if marker is not None:
                path = line[len(marker[0]):].strip()
                lines = header(path, created=marker[1], deleted=marker[2]).splitlines()
                if marker[1]:
                    lines.append("@@ new file @@")
                edits.append((path, lines))
                continue
            if line.startswith("*** Move to: ") and lines is not None:
                lines.append(f"# moved to {line[len('*** Move to: '):].strip()}")
                continue
        if lines is not None:
            lines.append(_hunk_line(line) if line[:2] == "@@" else line)
    return [(path, "\n".join(lines) + "\n") for path, lines in edits]


def patch_paths(patch: str) -> list[str]:
    """The files an apply_patch envelope touches, in order (what `from_apply_patch` would name)."""
    return [line[len(m[0]):].strip() for line in patch.splitlines() if line[:4] == "*** "
            for m in FILE_MARKERS if line.startswith(m[0])]


def _lines_of_sign(diff: str, sign: str) -> int:
    """Lines of `diff` (whose lines end only at "\n") starting with `sign` but not with the header's sign*3 + " "."""
    lines = diff.count("\n" + sign) + diff.startswith(sign)
    if not lines:
        return 0
    header = sign * 3 + " "
    return lines - diff.count("\n" + header) - diff.startswith(header)


def _hunk_line(line: str) -> str:
    context = line[2:].strip()
    return f"@@ {context} @@" if context and not context.endswith("@@") else line


def stats(diff: str | None) -> tuple[int, int]:
    """Lines added and removed, headers not counted."""
    if diff and not has_rare_breaks(diff):
        # lines end only at "\n": count line starts in C rather than splitting the diff into a list; header-like
        # lines are looked for only where lines of their sign are (a created file's diff removes none)
        return _lines_of_sign(diff, "+"), _lines_of_sign(diff, "-")
    added = removed = 0
    for line in (diff or "").splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed
