"""Progress of a long command, on stderr so that stdout (where `--json` goes) holds only the result.

On a terminal, a rich bar over the command's steps (a grading's stages, a deck's problems) with the step under way,
the time so far and, where the steps are alike, rich's estimate of the time left. Into a log, one plain line per
step instead of redraws.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class StepProgress:
    """`with StepProgress("grade", total=8) as progress: progress.step("lint") ...`: each step ends the one before.
    `estimate` adds the time left, from the mean time of the steps done: for steps of one kind only."""

    def __init__(self, what: str, total: int, *, estimate: bool = False, console: Console | None = None):
        self.what, self.total = what, total
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self.done = 0
        self._current: str | None = None
        self._progress: Progress | None = None
        if self.console.is_terminal:
            columns = [SpinnerColumn(), TextColumn(f"{what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
            if estimate:
                columns.append(TimeRemainingColumn())
            columns.append(TextColumn("{task.description}"))
            self._progress = Progress(*columns, console=self.console, transient=True)
            self._task = self._progress.add_task("", total=total)

    def __enter__(self) -> StepProgress:
        if self._progress is not None:
            self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def step(self, name: str, detail: str = "") -> None:
        """`name` starts now (`detail`: how much work it holds); the step before it (if any) is done. The name of
        the step under way again only updates its detail (how far it has got: "case 4 of 15")."""
        text = f"{name} ({detail})" if detail else name
        again = name == self._current
        self._current = name
        if self._progress is not None:
            # drawn at once rather than at the bar's next tick, so the step under way is the one shown
            self._progress.update(self._task, completed=self.done - again, description=text, refresh=True)
        else:
            elapsed = time.monotonic() - self.started
            self.console.print(f"[{elapsed:7.1f} s] {self.what} {self.done + (not again)}/{self.total}: {text}",
                               markup=False, highlight=False, soft_wrap=True)
        if not again:
            self.done += 1

    def note(self, text: str) -> None:
        """A line that stays above the bar (an item's outcome)."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
