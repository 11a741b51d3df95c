"""The GPU's turns across processes (kernelbench.harness.shared_turns), with real processes and real locks: a
measurement runs alone, waits for the stages under way, goes before the stages that ask after it, and a grading
killed while it holds a turn does not keep it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HOLDER = """
import sys, time
from pathlib import Path
from kernelbench.harness.shared_turns import SharedGpuTurns
folder, kind, hold, log = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
turns = SharedGpuTurns(folder)
with (turns.measuring() if kind == "measuring" else turns.beside()):
    start = time.time()
    log.write_text(f"{start}\\n")
    time.sleep(hold)
    log.write_text(f"{start} {time.time()}\\n")
"""


def hold(folder: Path, kind: str, seconds: float, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), kind, str(seconds), str(log)])


def span(log: Path) -> tuple[float, float]:
    start, end = map(float, log.read_text().split())
    return start, end


def wait_for_start(log: Path, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not (log.is_file() and log.read_text().strip()):
        assert time.monotonic() < deadline, f"{log.name} never took its turn"
        time.sleep(0.02)


def test_a_measurement_runs_alone_and_before_the_stages_that_ask_after_it(tmp_path: Path):
    turns = tmp_path / "turns"
    first = hold(turns, "beside", 1.5, tmp_path / "first")
    wait_for_start(tmp_path / "first")
    measuring = hold(turns, "measuring", 0.8, tmp_path / "measuring")
    time.sleep(0.5)  # the measurement is waiting for the first stage by now
    later = hold(turns, "beside", 0.3, tmp_path / "later")
    for proc in (first, measuring, later):
        assert proc.wait(timeout=30) == 0
    first_span, measured, later_span = (span(tmp_path / n) for n in ("first", "measuring", "later"))
    assert measured[0] >= first_span[1]   # it waited for the stage under way
    assert later_span[0] >= measured[1]   # and the stage asking after it waited for it


def test_stages_that_only_use_the_gpu_run_side_by_side(tmp_path: Path):
    turns = tmp_path / "turns"
    procs = [hold(turns, "beside", 1.0, tmp_path / f"b{i}") for i in range(3)]
    for proc in procs:
        assert proc.wait(timeout=30) == 0
    spans = [span(tmp_path / f"b{i}") for i in range(3)]
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # all three were in the room at once


def test_a_grading_killed_while_measuring_gives_its_turn_back(tmp_path: Path):
    turns = tmp_path / "turns"
    killed = hold(turns, "measuring", 60.0, tmp_path / "killed")
    wait_for_start(tmp_path / "killed")
    os.kill(killed.pid, signal.SIGKILL)  # as the suite kills a grading at its deadline
    killed.wait(timeout=10)
    started = time.time()
    after = hold(turns, "measuring", 0.1, tmp_path / "after")
    assert after.wait(timeout=30) == 0
    assert span(tmp_path / "after")[0] - started < 10  # not the 60 s the killed one meant to hold
