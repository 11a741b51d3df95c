"""Parsing and rendering with Python's cyclic garbage collector paused.

A transcript becomes hundreds of thousands of short-lived containers (one decoded record per line, its blocks,
the events built from them). The collector is triggered by allocation counts, and each pass walks every tracked
object of the generations it collects, so it runs thousands of times over a parse that creates no reference
cycles at all: measured, it was more than half the CPU time of a 100 MB Claude log. Reference counting still
frees everything as usual; only the cycle search waits until the work is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested uses are fine); it is restored as it was, even on error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
