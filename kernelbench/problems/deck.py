"""A deck folder's problems: what every command that takes a whole deck (a sweep, `kernelbench baselines all`, a
regrade of a board) lists them through, so that only the layout modules (kernelbench.problems.layouts) know what a
problem's folder holds.

An entry of the deck folder is a problem when some layout recognises it: a folder (ours, KernelBench-Hard's) or a
single file (Stanford KernelBench's). Entries whose names start with "." or "_" are the deck's own (a harness
package, caches) and never problems. A problem is named as its layout names its folder (a single file by its stem).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.problems import layouts
from kernelbench.problems.layouts import Layout
from kernelbench.problems.problem import Problem, open_problem


@dataclass(frozen=True)
class DeckEntry:
    """One problem of a deck folder as listed: found and its layout detected, not yet opened."""

    name: str
    path: Path
    layout: Layout

    def open(self) -> Problem:
        return open_problem(self.path, self.layout)


def deck_entries(deck: Path) -> list[DeckEntry]:
    """Every problem of the deck folder, by name, unopened; an error naming the folder when it is not one."""
    deck = Path(deck)
    if not deck.is_dir():
        raise KernelBenchError("no such deck folder", path=deck,
                               hint="point at a folder of problems such as problems/")
    entries = []
    for path in sorted(deck.iterdir()):
        if path.name.startswith((".", "_")):
            continue
        layout = layouts.detected(path)
        if layout is not None:
            entries.append(DeckEntry(name=layout.folder_name(path), path=path, layout=layout))
    return entries


def deck_problems(deck: Path, names: list[str] | None = None) -> list[Problem]:
    """The deck's problems opened: every one (`names` None), or those named, in the order named. An error names
    the deck and each name it lacks, or the problem file that does not open."""
    entries = {entry.name: entry for entry in deck_entries(deck)}
    if names is None:
        if not entries:
            raise KernelBenchError("no problems in this folder", path=deck,
                                   hint="a problem is a folder with problem.yaml and reference.py (or another "
                                        "benchmark's layout: see docs/grading.md)")
        return [entry.open() for entry in entries.values()]
    missing = [name for name in names if name not in entries]
    if missing:
        raise KernelBenchError(f"no problem named {', '.join(missing)} in this folder", path=deck,
                               hint=f"name one of the problems here: {', '.join(entries) or 'none'}")
    return [entries[name].open() for name in names]
