"""The CUPTI kernel recorder's record parsing and demangling (the recording itself needs a GPU: it is exercised by
every GPU grading's timed windows and reported in benchmarks/results/)."""

from __future__ import annotations

import ctypes
import struct

import pytest

from kernelbench.eval.integrity import cupti_kernels
from kernelbench.eval.integrity.cupti_kernels import NAME_OFFSET, demangle, kernel_record


def _record(kind: int, name: bytes, start: int, end: int) -> tuple[ctypes.Array, ctypes.Array]:
    """A kernel activity record laid out like CUpti_ActivityKernel4..9 (the fields the recorder reads)."""
    text = ctypes.create_string_buffer(name)
    raw = ctypes.create_string_buffer(160)
    struct.pack_into("<I", raw, 0, kind)
    struct.pack_into("<QQ", raw, 16, start, end)
    struct.pack_into("<Q", raw, NAME_OFFSET, ctypes.addressof(text))
    return raw, text


def test_a_kernel_record_gives_its_demangled_name_and_duration():
    raw, _text = _record(10, b"_Z11spin_kernell", 5_000, 7_500)
    name, us = kernel_record(ctypes.addressof(raw))
    assert name == "spin_kernel(long)" and us == pytest.approx(2.5)


def test_other_records_and_plain_names():
    raw, _text = _record(1, b"memcpy", 0, 10)
    assert kernel_record(ctypes.addressof(raw)) is None  # a memcpy record is not a kernel
    raw, _text = _record(3, b"_kahan_softmax_kernel", 0, 1000)
    assert kernel_record(ctypes.addressof(raw)) == ("_kahan_softmax_kernel", 1.0)  # Triton names stay as they are


def test_demangle_matches_what_the_launch_audit_reads():
    if cupti_kernels.CXA_DEMANGLE is None:
        pytest.skip("no libstdc++ __cxa_demangle in this process")
    assert demangle(b"_ZN2at6native13reduce_kernelILi512ELi1EEEvv") == "void at::native::reduce_kernel<512, 1>()"
    assert demangle(b"_Znot_a_symbol") == "_Znot_a_symbol"


def test_without_a_gpu_the_recorder_is_unavailable_and_says_why():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(cupti_kernels.CuptiUnavailable, match="libcupti|CUPTI"):
        cupti_kernels.kernel_recorder()


def test_grader_work_inside_a_recording_pauses_the_cupti_recorder(monkeypatch):
    from contextlib import contextmanager

    from kernelbench.eval.integrity.profiling import unrecorded

    events: list[str] = []

    class Recorder:
        @contextmanager
        def paused(self):
            events.append("paused")
            yield
            events.append("resumed")

    monkeypatch.setattr(cupti_kernels, "active_recorder", Recorder())
    with unrecorded():
        events.append("grader work")
    assert events == ["paused", "grader work", "resumed"]
    monkeypatch.setattr(cupti_kernels, "active_recorder", None)
    with unrecorded():
        events.append("no recording")
    assert events[-1] == "no recording"
