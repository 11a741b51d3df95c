"""Parsing and rendering pause the cyclic garbage collector and always give it back as it was."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from kernelbench.transcripts import NormalizedWriter, load
from kernelbench.transcripts.gcpause import gc_paused
from kernelbench.transcripts.viewer import write_viewer


def test_collector_restored_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_load_and_render_leave_the_collector_on(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    with NormalizedWriter(source, harness="scripted", model="m") as log:
        log.user("hello")
    session = load(source)
    assert gc.isenabled()
    write_viewer(session, tmp_path / "transcript", asset_prefix="")
    assert gc.isenabled()


def test_survivors_of_a_pause_go_to_the_oldest_generation() -> None:
    with gc_paused():
        kept = [[] for _ in range(5000)]        # containers the young generation would have walked
    assert gc.get_count()[0] < 100              # no young pass waiting at the next allocation
    assert gc.get_freeze_count() == 0           # nothing left frozen
    assert all(gc.is_tracked(item) for item in kept[:3])
    gc.collect()                                # a full collection still reaches them (and frees cycles)
    cycle: list = []
    cycle.append(cycle)
    with gc_paused():
        pass
    del cycle
    assert gc.collect() >= 1


def test_objects_frozen_by_the_process_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            [[] for _ in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
