"""Template files hashed before and after a grading: an edit is restored and the run marked invalid."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from kernelbench.eval.integrity.catalogue import finding
from kernelbench.results.run import Finding

CHECK = "template_hash"


@dataclass
class Snapshot:
    """Bytes and sha256 of each watched file (None: the file did not exist)."""

    files: dict[Path, bytes | None]

    def hashes(self) -> dict[str, str]:
        return {str(p): hashlib.sha256(b).hexdigest() if b is not None else "" for p, b in self.files.items()}


def snapshot(paths: list[Path]) -> Snapshot:
    return Snapshot({Path(p): Path(p).read_bytes() if Path(p).is_file() else None for p in paths})


def changed_files(before: Snapshot, after: Snapshot | None = None) -> list[Path]:
    after = after or snapshot(list(before.files))
    old, new = before.hashes(), after.hashes()
    return [Path(p) for p in old if old[p] != new.get(p)]


def restore(before: Snapshot, paths: list[Path]) -> None:
    """Put the watched files back exactly as they were (a file created since is removed)."""
    for path in paths:
        content = before.files.get(Path(path))
        if content is None:
            Path(path).unlink(missing_ok=True)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(content)


def diff_summary(before: bytes | None, path: Path, limit: int = 3) -> str:
    """A short description of how a file changed (first differing lines)."""
    now = path.read_bytes() if path.is_file() else None
    if now is None:
        return "deleted"
    if before is None:
        return "created"
    old, new = before.decode(errors="replace").splitlines(), now.decode(errors="replace").splitlines()
    diffs = [f"line {i + 1}: {a[:60]!r} -> {b[:60]!r}" for i, (a, b) in enumerate(zip(old, new)) if a != b]
    if len(old) != len(new):
        diffs.append(f"{len(old)} -> {len(new)} lines")
    return "; ".join(diffs[:limit]) or "bytes changed"


def template_findings(before: Snapshot, restore_files: bool = True) -> list[Finding]:
    """Compare the watched files with the snapshot; restore them and report each change (class 12)."""
    changed = changed_files(before)
    findings = [finding(CHECK, 12, f"grading template file {p.name} was changed during grading",
                        evidence=f"{p}: {diff_summary(before.files.get(p), p)}", file=p.name) for p in changed]
    if restore_files and changed:
        restore(before, changed)
    return findings
