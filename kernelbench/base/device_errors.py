"""Errors a GPU raises because of the moment, not the code: what a fallback must never answer.

Drawing a reference's weights or a case's inputs on the GPU, and drawing them on the CPU where the module's own
code cannot run on the GPU, is the same in every process of a grading only while the choice depends on the code.
Running out of GPU memory depends on what else holds the card at that moment, and the CPU generator draws other
numbers than the GPU's under the same seed: a process that fell back while another did not graded a line against
other weights or inputs than the judge's (benchmarks/results/h100_honest_full_1207b.md)."""

from __future__ import annotations

from typing import Any

# what a CUDA runtime says when it cannot get memory or its context is broken
MOMENT_WORDS = ("out of memory", "CUDA error", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")


def depends_on_the_moment(torch: Any, exc: BaseException) -> bool:
    """An error of a GPU draw that another process, or another moment, would not meet."""
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())):
        return True
    return any(words in str(exc) for words in MOMENT_WORDS)
