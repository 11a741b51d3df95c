"""What travels with a solution into its grading: solution.py and the files beside it that it loads (sidecar
sources, helper modules, a header tree such as CUTLASS), copied once into the grading's own folder, where every
stage imports them read-only and their bytes are checked before each timed stage (stages/audits.graded_copy).

A solution that loads `kernels.cu` or `helpers.py` from beside itself must find them in the copy, or an honest
solution fails for a file the grader left behind. A folder that is not a solution's own (a checkout, a home
folder) must not be copied whole: only files of the kinds solutions load, and folders below only within bounds.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_SUFFIXES = frozenset({".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl", ".ptx",
                             ".cubin", ".fatbin", ".so", ".json", ".yaml", ".yml", ".txt"})
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "runs", "site", "annotations"})
MAX_FILES = 20_000
MAX_BYTES = 512 << 20
MAX_FILE_BYTES = 64 << 20


@dataclass
class SolutionCopy:
    files: list[Path] = field(default_factory=list)      # copied, relative to the folder
    skipped: list[str] = field(default_factory=list)     # what was left behind, and why (for the log)


def copy_solution_folder(solution: Path, dest: Path) -> SolutionCopy:
    """Copy `solution` (as dest/<its name>) and what beside it a solution may load. Links are not followed."""
    folder = solution.parent
    copy = SolutionCopy()
    candidates = [p for p in _walk(folder) if p != solution]
    budget_files, budget_bytes = MAX_FILES, MAX_BYTES
    for path in sorted(candidates):
        rel = path.relative_to(folder)
        size = path.lstat().st_size
        if size > MAX_FILE_BYTES:
            copy.skipped.append(f"{rel}: {size} bytes, over {MAX_FILE_BYTES >> 20} MiB")
            continue
        if budget_files <= 0 or size > budget_bytes:
            copy.skipped.append(f"{rel} and the rest: over {MAX_FILES} files or {MAX_BYTES >> 20} MiB beside the "
                                "solution")
            break
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target, follow_symlinks=False)
        copy.files.append(rel)
        budget_files, budget_bytes = budget_files - 1, budget_bytes - size
    shutil.copy2(solution, dest / solution.name)
    return copy


def _walk(folder: Path):
    """Regular files of the kinds solutions load, below `folder`, not through links, hidden or bulky folders."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS
                   and not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = Path(root) / name
            if path.suffix in SOURCE_SUFFIXES and not name.startswith(".") and path.is_file() \
                    and not path.is_symlink():
                yield path
