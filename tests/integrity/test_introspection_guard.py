"""The audit hook that refuses a solution's reach for frames and live objects, run in a fresh interpreter (an
audit hook cannot be removed, so never in the test process): each route is refused and named when the solution's
own code asks, and the standard library and torch asking for frames on their own behalf are left alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RUNNER = """
import json, sys
from kernelbench.eval.integrity.introspection import IntrospectionGuard
guard = IntrospectionGuard((sys.argv[1],))
guard.install()
sys.path.insert(0, sys.argv[1])
outcome = {}
import candidate
for name in sorted(n for n in dir(candidate) if n.startswith("try_")):
    try:
        getattr(candidate, name)()
        outcome[name] = "allowed"
    except PermissionError as exc:
        outcome[name] = "refused: " + str(exc)
print(json.dumps({"outcome": outcome, "refused": guard.refused}))
"""

CANDIDATE = """
import ctypes, gc, inspect, logging, sys, traceback, warnings

def try_getframe():
    return sys._getframe(1)

def try_inspect_currentframe():
    return inspect.currentframe()

def try_traceback_frame_by_computed_name():
    try:
        raise KeyError
    except KeyError as exc:
        name = "".join(chr(c) for c in (116, 98, 95, 102, 114, 97, 109, 101))
        return getattr(sys.exc_info()[2], name)

def try_gc_walk():
    return len(gc.get_objects())

def try_code_swap():
    def a():
        return 1
    a.__code__ = (lambda: 2).__code__

def try_ctypes_frame_api():
    return ctypes.pythonapi.PyFrame_LocalsToFast

def try_settrace():
    sys.settrace(None)

def try_honest_warning_logging_traceback():
    warnings.warn("deprecated", stacklevel=2)
    logging.getLogger("kb-test").warning("a log line")
    try:
        raise ValueError
    except ValueError:
        traceback.format_exc()
    return ctypes.sizeof(ctypes.c_int)
"""


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("introspection")
    (root / "candidate.py").write_text(textwrap.dedent(CANDIDATE))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(root) + "/"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("route", ["try_getframe", "try_inspect_currentframe", "try_traceback_frame_by_computed_name",
                                   "try_gc_walk", "try_code_swap", "try_ctypes_frame_api", "try_settrace"])
def test_each_route_is_refused_and_named(verdicts, route):
    assert verdicts["outcome"][route].startswith("refused: refused by the grader: solution code"), verdicts
    assert "candidate.py:" in verdicts["outcome"][route]


def test_the_library_asking_on_its_own_behalf_is_left_alone(verdicts):
    assert verdicts["outcome"]["try_honest_warning_logging_traceback"] == "allowed", verdicts


def test_refusals_are_kept_once_each_for_the_report(verdicts):
    refused = verdicts["refused"]
    assert len(refused) == len(set(refused)) == 7, refused
    assert any(r.startswith("reads .tb_frame") for r in refused)
    assert any("PyFrame_LocalsToFast" in r for r in refused)
