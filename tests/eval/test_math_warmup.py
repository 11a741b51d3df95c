"""The math library's kernels are chosen before any multithreaded call (pytorch/pytorch#188792).

oneMKL 2024.2 chooses each vector-math function's kernel on its first call; a first call that torch splits over
several threads sometimes ran one thread's chunk through a low-accuracy kernel (torch.exp off by up to 1.5e-4
relative in float32). In a grading that was the bench stage's first timed call of the honest eager softmax on
the CPU: INVALID, "a timed call returned a wrong output", in about 3% of gradings. Every worker stage therefore
makes each such function choose its kernel from one thread before the reference or a candidate runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kernelbench.eval.portable import guards
from kernelbench.eval.worker import entry
from kernelbench.problems import loader
from tests.eval.conftest import minimal_job

VML_HEADER = Path(torch.__file__).parent / "include" / "ATen" / "cpu" / "vml.h"


class _Stop(Exception):
    pass


@pytest.mark.parametrize("role", ["judge", "check", "bench", "fresh"])
def test_every_stage_warms_the_math_library_before_loading_code(role: str, monkeypatch, tmp_path: Path):
    events: list[str] = []
    monkeypatch.setattr(guards, "warm_math_library", lambda: events.append("warm"))

    def load_reference(path):
        events.append("load reference")
        raise _Stop

    monkeypatch.setattr(loader, "load_reference", load_reference)
    with pytest.raises(_Stop):
        entry.prepare(minimal_job(role, tmp_path))
    assert events == ["warm", "load reference"]


class _Calls(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, torch.dtype, int]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if args and isinstance(args[0], torch.Tensor):
            self.seen.append((getattr(func, "__name__", str(func)), args[0].dtype, args[0].numel()))
        return func(*args, **(kwargs or {}))


def test_warm_up_calls_each_vml_function_once_per_precision_on_one_element():
    with _Calls() as calls:
        guards.warm_math_library()
    called = {(name, dtype) for name, dtype, _ in calls.seen}
    assert called == {(name, dtype) for name in guards.VML_OPS for dtype in guards.VML_DTYPES}
    # one element: far below torch's parallel grain, so the kernel choice happens on this thread alone
    assert {numel for _, _, numel in calls.seen} == {1}


def test_warm_up_covers_every_function_torch_sends_to_mkl_vml():
    """The list follows torch's own (a torch upgrade that routes another function to VML fails here)."""
    if not VML_HEADER.is_file() or not torch.backends.mkl.is_available():
        pytest.skip(f"no MKL build or no {VML_HEADER}")
    routed = set(re.findall(r"^\s*IMPLEMENT_VML_MKL\((\w+),", VML_HEADER.read_text(), flags=re.MULTILINE))
    assert routed and routed <= set(guards.VML_OPS)
