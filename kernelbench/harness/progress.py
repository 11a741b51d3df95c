"""The live sweep table: one row per agent × problem, one cell per trial."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kernelbench.harness.jobs import Job, JobSummary

STYLES = {"PASS": "green", "FAIL": "yellow", "ERR": "red", "INVALID": "magenta", "running": "cyan",
          "queued": "dim", "retry": "blue", "done": "dim"}


class SweepProgress:
    def __init__(self, jobs: list[Job], trials: int, skipped: int, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.trials, self.skipped = trials, skipped
        self.cells: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for job in sorted(jobs, key=lambda j: (j.key[0], j.key[1])):
            agent, problem, trial = job.key
            row = self.cells.setdefault((agent, problem), [("done", "✓ earlier")] * trials)
            row[trial - 1] = ("queued", "·")
        self.started = time.monotonic()
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._live: Live | None = None

    def __enter__(self) -> "SweepProgress":
        if self.console.is_terminal:
            self._live = Live(self.render(), console=self.console, refresh_per_second=2, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self.render())
            self._live.__exit__(*exc)
        else:
            self.console.print(self.render())

    def start(self, job: Job) -> None:
        self._set(job, "running", "running" if job.attempt == 1 else f"retry {job.attempt - 1}")

    def done(self, job: Job, summary: JobSummary, retrying: bool) -> None:
        if retrying:
            self._set(job, "retry", f"{summary.outcome} → retry")
            return
        if summary.error:
            self._set(job, "ERR", "harness error")
        else:
            fraction = f" {summary.peak_fraction:.3f}" if summary.peak_fraction is not None else ""
            self._set(job, summary.status, f"{summary.status}{fraction}")
        with self._lock:
            key = "ERR" if summary.error else summary.status
            self.counts[key] = self.counts.get(key, 0) + 1
        if not self.console.is_terminal:  # a log file gets one line per finished run instead of redraws
            self.console.print(f"{job.agent} {job.problem_name} t{job.trial}: {describe(summary)}",
                               markup=False, highlight=False, soft_wrap=True)

    def _set(self, job: Job, state: str, text: str) -> None:
        agent, problem, trial = job.key
        with self._lock:
            self.cells[(agent, problem)][trial - 1] = (state, text)
        if self._live is not None:
            self._live.update(self.render())

    def render(self):
        table = Table(title="sweep", expand=False, show_lines=False)
        table.add_column("agent")
        table.add_column("problem")
        for trial in range(1, self.trials + 1):
            table.add_column(f"t{trial}")
        with self._lock:
            for (agent, problem), row in self.cells.items():
                table.add_row(agent, problem, *[Text(text, style=STYLES.get(state, "")) for state, text in row])
            counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "none yet"
        elapsed = time.monotonic() - self.started
        footer = Text(f"finished: {counts}; skipped (already done): {self.skipped}; elapsed {elapsed:.0f} s")
        return Group(table, footer)


def describe(summary: JobSummary) -> str:
    if summary.error:
        return f"error: {summary.error}"
    return f"{summary.status} ({summary.outcome}) {Path(summary.run_dir or '').name}"
