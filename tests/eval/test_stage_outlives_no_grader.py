"""A stage process runs in a session of its own, which a signal to the grader's process group does not reach; it
must still end when the process that started it ends (`confinement.die_with_parent`, in every stage's
`apply_common_limits`), or a grader killed by a timeout leaves its stages running with nobody to read them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import subprocess, sys, time
from kernelbench import confinement
hook = confinement.apply_common_limits if sys.argv[1] == "stage" else None
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True,
                         preexec_fn=hook)
print(child.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next(line for line in f if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "Z" not in state.split()[1]  # a zombie has ended; only its parent's reaping is left


def child_after_parent_killed(kind: str) -> int:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, kind], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return child


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_stage_ends_with_the_process_that_started_it():
    assert gone_within(child_after_parent_killed("stage"), 10)


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_a_process_in_its_own_session_without_it_outlives_its_parent():
    child = child_after_parent_killed("plain")
    try:
        assert not gone_within(child, 1.5)
    finally:
        os.kill(child, signal.SIGKILL)
