"""The GPU's turns (kernelbench.harness.regrade.GpuTurns) for gradings in separate processes on one machine.

`kernelbench regrade --jobs N` grades in threads of one process and keeps its turns in memory. A script that
starts each grading as a process of its own (benchmarks/integrity_gpu.py, which must be able to kill a grading at
its deadline) keeps the same rule in two lock files instead: a measuring stage (counters, timing) runs with no
stage of another grading on the GPU; the stages that only use it run side by side; a measurement waiting for its
turn goes before every side-by-side stage that asks after it, so it is never starved.

The rule is the classic turnstile: every stage passes through the gate (an exclusive lock, held for a moment); a
measurement keeps the gate while it waits for the room alone, so no new stage enters meanwhile. The locks are
flock(2) locks on files the gradings share, released by the kernel when a process dies, so a grading killed at its
deadline never holds the GPU."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import TextIO


class SharedGpuTurns:
    """Turns kept in `folder` (made if missing); every grading that shares the GPU must name the same folder."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.gate, self.room = folder / "gate.lock", folder / "room.lock"

    def measuring(self) -> FileTurn:
        return FileTurn(self, alone=True)

    def beside(self) -> FileTurn:
        return FileTurn(self, alone=False)


class FileTurn:
    """One stage's turn; entered once per group of stages (grade.run_stages enters it again later, never nested)."""

    def __init__(self, turns: SharedGpuTurns, alone: bool):
        self.turns, self.alone = turns, alone
        self.room: TextIO | None = None

    def __enter__(self) -> FileTurn:
        with open(self.turns.gate, "a") as gate:
            fcntl.flock(gate, fcntl.LOCK_EX)  # through the turnstile; closing the file lets the next one through
            self.room = open(self.turns.room, "a")
            # a measurement takes the room while it still holds the gate: later stages wait behind it
            fcntl.flock(self.room, fcntl.LOCK_EX if self.alone else fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.room is not None:
            self.room.close()  # closing the last descriptor releases the lock
            self.room = None
