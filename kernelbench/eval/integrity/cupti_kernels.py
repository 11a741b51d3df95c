"""Names of the kernels a stretch of calls ran, recorded through CUPTI's activity API directly (ctypes, the
libcupti torch has already loaded), for the audited windows of the timed loop on a GPU.

torch's profiler would do the same work, but a candidate can ask torch whether its profiler is recording and
compute honestly exactly then (tests/integrity/cases/01_library_unless_watched.py). Recording kernel activity
through CUPTI itself leaves torch's profiler off and no trace function set: nothing torch or Python reports
differs between a recorded timed call and another. Only kernel records are enabled (the concurrent kind, which
does not serialise kernels), read from buffers CUPTI fills on its own thread.

A kernel record's name is a `const char *` at byte 104 in every kernel record layout since CUDA 11
(CUpti_ActivityKernel4 through 9 keep that prefix and grow at the end). `KernelRecorder.calibrate` checks it on
this machine by recording torch's own spin kernel first; where that fails, the recorder is unavailable and the
caller falls back to torch's profiler. Names are demangled like torch's profiler demangles them (__cxa_demangle),
so the launch audit's rules read the same text from either recorder.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KIND_KERNEL, KIND_CONCURRENT_KERNEL = 3, 10
START_OFFSET, END_OFFSET, NAME_OFFSET = 16, 24, 104
BUFFER_BYTES = 4 << 20
FLUSH_FORCED = 1
SUCCESS = 0

_REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                            ctypes.POINTER(ctypes.c_size_t))
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_size_t)


class CuptiUnavailable(RuntimeError):
    """CUPTI's activity API cannot be used in this process (why is the message)."""


def demangle(name: bytes) -> str:
    """A C++ symbol as torch's profiler shows it; other names (Triton's kernels) as they are."""
    text = name.decode("utf-8", "replace")
    if not text.startswith("_Z") or CXA_DEMANGLE is None:
        return text
    status = ctypes.c_int(1)
    out = CXA_DEMANGLE(name, None, None, ctypes.byref(status))
    if status.value != 0 or not out:
        return text
    try:
        return ctypes.string_at(out).decode("utf-8", "replace")
    finally:
        _LIBC.free(ctypes.c_void_p(out))


def kernel_record(address: int) -> tuple[str, float] | None:
    """(name, duration in µs) of the activity record at `address` when it is a kernel record, else None."""
    kind = ctypes.c_uint32.from_address(address).value
    if kind not in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
        return None
    start = ctypes.c_uint64.from_address(address + START_OFFSET).value
    end = ctypes.c_uint64.from_address(address + END_OFFSET).value
    pointer = ctypes.c_void_p.from_address(address + NAME_OFFSET).value
    name = demangle(ctypes.string_at(pointer)) if pointer else "<unnamed kernel>"
    return name, max(0, end - start) / 1e3


class KernelRecorder:
    """`with recorder.recording() as names: ...` fills names (kernel name -> device µs) when the block ends."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.lock = threading.Lock()
        self.buffers: dict[int, ctypes.Array] = {}
        self.current: dict[str, float] | None = None
        self._request, self._complete = _REQUEST(self._on_request), _COMPLETE(self._on_complete)
        lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        self._check(lib.cuptiActivityRegisterCallbacks(self._request, self._complete), "register buffer callbacks")

    def _check(self, result: int, what: str) -> None:
        if result != SUCCESS:
            raise CuptiUnavailable(f"CUPTI could not {what} (CUptiResult {result})")

    def _on_request(self, buffer, size, max_records) -> None:
        raw = ctypes.create_string_buffer(BUFFER_BYTES + 8)
        address = (ctypes.addressof(raw) + 7) & ~7  # records must be 8-byte aligned
        self.buffers[address] = raw
        buffer[0], size[0], max_records[0] = address, BUFFER_BYTES, 0

    def _on_complete(self, _context, _stream, buffer, _size, valid) -> None:
        record = ctypes.c_void_p(None)
        found: list[tuple[str, float]] = []
        while self.lib.cuptiActivityGetNextRecord(buffer, valid, ctypes.byref(record)) == SUCCESS:
            assert record.value is not None  # a record handed back with CUPTI_SUCCESS is set
            parsed = kernel_record(record.value)
            if parsed is not None:
                found.append(parsed)
        with self.lock:
            if self.current is not None:
                for name, us in found:
                    self.current[name] = self.current.get(name, 0.0) + us
        self.buffers.pop(buffer, None)

    @contextmanager
    def recording(self) -> Iterator[dict[str, float]]:
        import torch

        global active_recorder
        names: dict[str, float] = {}
        with self.lock:
            self.current = names
        self._check(self.lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL), "enable kernel records")
        active_recorder = self
        try:
            yield names
        finally:
            active_recorder = None
            torch.cuda.synchronize()
            self.lib.cuptiActivityFlushAll(FLUSH_FORCED)
            self.lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
            self.lib.cuptiActivityFlushAll(FLUSH_FORCED)
            with self.lock:
                self.current = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Grader work inside a recording (the judging of a stress call's output between timed calls) left out:
        everything launched before is finished (and so recorded) first, and nothing launched meanwhile is."""
        import torch

        torch.cuda.synchronize()
        self.lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
        try:
            yield
        finally:
            torch.cuda.synchronize()
            self.lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL)

    def calibrate(self) -> None:
        """Record torch's spin kernel: its name must come back from the name field (the layout is right here)."""
        import torch

        with self.recording() as names:
            torch.cuda._sleep(1000)
        if not any("spin_kernel" in name for name in names):
            raise CuptiUnavailable(f"a recorded spin kernel came back as {sorted(names)[:3]}, not by its name")


_RECORDER: KernelRecorder | None = None
active_recorder: KernelRecorder | None = None  # the recorder while a recording is open


@contextmanager
def paused_if_recording() -> Iterator[None]:
    """KernelRecorder.paused() of the open recording, if any (profiling.unrecorded calls it)."""
    if active_recorder is None:
        yield
        return
    with active_recorder.paused():
        yield


def kernel_recorder() -> KernelRecorder:
    """The process's recorder (CUPTI takes one set of buffer callbacks per process), calibrated once."""
    global _RECORDER
    if _RECORDER is None:
        recorder = KernelRecorder(ctypes.CDLL(_loaded_cupti()))
        recorder.calibrate()
        _RECORDER = recorder
    return _RECORDER


def _loaded_cupti() -> str:
    """The libcupti torch loaded (the same library and version its profiler uses)."""
    import torch  # noqa: F401  (loads libcupti with the profiler's libraries)

    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if "libcupti" in Path(path).name:
            return path
    raise CuptiUnavailable("no libcupti is loaded in this process")


def _cxa_demangle():
    try:
        fn = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return fn


CXA_DEMANGLE = _cxa_demangle()  # libstdc++'s demangler; None in a process without one (names are kept as they are)
_LIBC = ctypes.CDLL(None)
