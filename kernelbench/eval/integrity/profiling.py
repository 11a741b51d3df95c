"""Inside the grading worker: record the names of what a candidate's call ran, for the launch audit.

On CUDA the names are kernel names (with device time, which the fp8 SASS check weighs); on the CPU they are
aten operator names, so the same audit runs in CI without a GPU.

Besides kernels, the call is watched for Python code of the problem's own files (reference.py, sota.py) running
inside it. The worker has loaded the reference to build the weights, so a candidate can reach its Model through
the process (the class hierarchy, a function's globals, the garbage collector, sys.modules) without naming it;
however it got there, the reference's code objects still carry their file name when they run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

PROBLEM_CODE_PREFIX = "python::"  # launch names of problem-file code that ran inside the candidate's call


@contextmanager
def record_launches(device_type: str, watch_files: Iterable[str | Path] = (),
                    kernels_only: bool = False) -> Iterator[dict[str, float]]:
    """`with record_launches("cuda") as launches: model(*inputs)` fills launches: name -> device time (us);
    code from `watch_files` that runs in between is recorded as `python::<file>:<function>`.

    `kernels_only` (CUDA): kernel names without the aten operators, for calls whose pace must stay close to the
    unrecorded ones (the timed loop's audited windows): the operator recording costs tens of microseconds per op,
    enough for a candidate that watches its call cadence to see it."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    launches: dict[str, float] = {}
    kernels = device_type == "cuda" and kernels_only
    activities = ([] if kernels else [ProfilerActivity.CPU]) + \
        ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with profile(activities=activities, record_shapes=False) as prof, watch_code(watch_files) as ran:
        _RECORDING.append((prof, activities))
        try:
            yield launches
            if device_type == "cuda":
                torch.cuda.synchronize()
        finally:
            _RECORDING.pop()
    launches.update(launches_of(prof, device_type))
    launches.update({name: 0.0 for name in ran})


_RECORDING: list[tuple] = []  # the recordings in progress in this process: (profiler, activities)


@contextmanager
def unrecorded() -> Iterator[None]:
    """Grader code run inside a recording without being recorded: the timed outputs' validation, which calls the
    problem's own compare() hook between the candidate's timed calls (worker.TimedJudge). Covers the CUPTI kernel
    recorder of the GPU timed windows (cupti_kernels) as well as torch's profiler."""
    from kernelbench.eval.integrity.cupti_kernels import paused_if_recording

    with paused_if_recording():
        yield from _unprofiled()


def _unprofiled() -> Iterator[None]:
    if not _RECORDING:
        yield
        return
    prof, activities = _RECORDING[-1]
    tracer = sys.gettrace()
    sys.settrace(None)
    prof.toggle_collection_dynamic(False, activities)
    try:
        yield
    finally:
        prof.toggle_collection_dynamic(True, activities)
        sys.settrace(tracer)


MIN_WATCHED_BYTECODE = 48  # bytes: a function this short (a one-line helper) may well be written twice honestly


def code_fingerprints(files: Iterable[str | Path]) -> dict[tuple, str]:
    """The functions of `files` by what they are, not where they live: (bytecode, names, constants) -> the
    file's name. A copy of the reference loaded from another path, or its source exec'd under another name, runs
    the same code objects."""
    found: dict[tuple, str] = {}
    for path in files:
        try:
            todo = [compile(Path(path).read_text(), str(path), "exec")]
        except (OSError, SyntaxError, ValueError):
            continue
        while todo:
            code = todo.pop()
            todo += [c for c in code.co_consts if isinstance(c, type(code))]
            # named functions only: a comprehension or lambda (`<genexpr>`) is a fragment a solution that follows
            # the reference's math writes the same way, not the reference running
            if not code.co_name.startswith("<") and len(code.co_code) >= MIN_WATCHED_BYTECODE:
                found[_fingerprint(code)] = Path(path).name
    return found


def _fingerprint(code) -> tuple:
    consts = tuple(c if not isinstance(c, type(code)) else c.co_name for c in code.co_consts)
    return code.co_code, code.co_names, repr(consts)


@contextmanager
def watch_code(files: Iterable[str | Path]) -> Iterator[set[str]]:
    """Names of the functions defined in `files` that were called meanwhile (any thread started meanwhile too),
    wherever their code was loaded from (`code_fingerprints`)."""
    files = list(files)
    watched = {str(Path(f).resolve()) for f in files}
    ran: set[str] = set()
    if not watched:
        yield ran
        return
    fingerprints = code_fingerprints(files)
    seen: dict[object, str | None] = {}

    def origin(code) -> str | None:
        if code not in seen:
            seen[code] = Path(code.co_filename).name if code.co_filename in watched else \
                fingerprints.get(_fingerprint(code))
        return seen[code]

    def tracer(frame, _event, _arg):
        # the global trace function is called once per new frame; returning None skips the frame's lines. Any
        # trace function slows pure-Python code (interpreted Triton on the CPU: about 3x; on a GPU the timed stage
        # runs without it)
        code = frame.f_code
        name = origin(code)
        if name is not None:
            ran.add(f"{PROBLEM_CODE_PREFIX}{name}:{getattr(code, 'co_qualname', code.co_name)}")

    previous = sys.gettrace()
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        yield ran
    finally:
        threading.settrace(None)  # type: ignore[arg-type]
        sys.settrace(previous)


def launches_of(prof, device_type: str) -> dict[str, float]:
    names: dict[str, float] = {}
    for event in prof.events():
        kind = str(getattr(event, "device_type", "")).rsplit(".", 1)[-1].lower()
        if device_type == "cuda" and kind == "cuda":
            names[event.name] = names.get(event.name, 0.0) + float(getattr(event, "device_time", 0.0) or 0.0)
        elif event.name.startswith("aten::"):
            names.setdefault(event.name, 0.0)
    return names
