"""Parsing and rendering with Python's cyclic garbage collector paused.

A transcript becomes hundreds of thousands of short-lived containers (one decoded record per line, its blocks,
the events built from them). The collector is triggered by allocation counts, and each pass walks every tracked
object of the generations it collects, so it runs thousands of times over a parse that creates no reference
cycles at all: measured, it was more than half the CPU time of a 100 MB Claude log. Reference counting still
frees everything as usual; only the cycle search waits until the work is done.

When the pause ends, everything the work left alive is handed to the oldest generation: the allocation count
kept growing while paused, so the first allocation afterwards would otherwise start a young-generation pass over
every object the parse built (13 ms after a 100 MB Claude log, for a session that holds no cycle). Those objects
are still searched by the next full collection, as any long-lived object is.
"""

from __future__ import annotations

import gc


class gc_paused:  # lower case: used like the function it replaced, `with gc_paused():`
    """Pause the cyclic collector for the block (nested uses are fine); it is restored as it was, even on error.
    A class rather than a generator-based context manager: it wraps every load and every viewer write, and the
    generator machinery cost more than the two calls it manages on a small file."""

    __slots__ = ("was_enabled",)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.was_enabled:
            promote_survivors()
            gc.enable()


def promote_survivors() -> None:
    """Move every tracked object to the oldest generation without walking them, and reset the young count:
    `freeze` splices the generations' lists onto the permanent one, `unfreeze` splices that onto the oldest.
    Skipped where the process froze objects of its own (a server before forking): unfreezing would release
    them too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
