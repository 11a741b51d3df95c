"""The worker's runtime watch over the grader's code and the library functions it calls (class 11): every way of
changing a watched name is reported, however it is spelt; torch's own changes to itself and new names are not."""

from __future__ import annotations

import json
import statistics
import types

import pytest
import torch

import kernelbench.eval.portable.timing as timing
from kernelbench.eval.integrity.namespaces import NamespaceWatch


@pytest.fixture
def watch() -> NamespaceWatch:
    return NamespaceWatch.take()


def test_nothing_changed_reports_nothing(watch):
    assert watch.changes() == []


def test_a_replacement_through_the_namespace_dict_is_reported(watch):
    original = json.dumps
    try:
        json.__dict__["dumps"] = lambda *a, **k: "{}"
        changes = watch.changes()
    finally:
        json.__dict__["dumps"] = original
    assert len(changes) == 1 and changes[0].startswith("json.dumps was replaced (now ")
    assert "test_namespace_watch.py:" in changes[0]  # where the replacement was defined
    assert watch.changes() == []


def test_a_code_swap_in_place_is_reported(watch):
    original = statistics.median.__code__
    try:
        statistics.median.__code__ = (lambda data: 0.0).__code__
        changes = watch.changes()
    finally:
        statistics.median.__code__ = original
    assert changes == ["statistics.median: its __code__ changed in place"]


def test_deletion_constants_and_class_methods_are_watched(watch, monkeypatch):
    monkeypatch.delattr(torch.cuda, "synchronize")
    monkeypatch.setattr(timing, "MIN_TRIALS_WHEN_OUT_OF_TIME", 1)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 1e-3)
    changes = watch.changes()
    assert "torch.cuda.synchronize was deleted" in changes
    assert "kernelbench.eval.portable.timing.MIN_TRIALS_WHEN_OUT_OF_TIME was replaced (now 1)" in changes
    assert any(c.startswith("torch.cuda.streams.Event.elapsed_time was replaced") for c in changes), changes


def test_new_names_are_not_changes(watch, monkeypatch):
    monkeypatch.setattr(json, "kb_added_later", 1, raising=False)
    assert watch.changes() == []


def test_a_wrapper_that_only_claims_to_be_torch_s_is_reported(watch, monkeypatch):
    """torch's own wrappers are let through only when their code lives in torch's files."""
    original = torch.cuda.synchronize

    def fake(*args, **kwargs):
        return None

    fake.__module__, fake.__wrapped__ = "torch.cuda", original
    monkeypatch.setattr(torch.cuda, "synchronize", fake)
    assert [c for c in watch.changes() if c.startswith("torch.cuda.synchronize was replaced")]


@pytest.mark.slow
def test_torch_compile_changes_nothing_watched(watch):
    """torch.compile wraps torch.manual_seed in its own `disable` and patches Module's constructor: neither is a
    candidate's tampering, so an honest solution that compiles is not reported."""
    compiled = torch.compile(lambda x: x * 2 + 1, backend="eager")
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 3.0))
    assert watch.changes() == []


def test_the_grader_s_own_classes_are_watched_method_by_method(watch, monkeypatch):
    monkeypatch.setattr(timing.Timing, "median_ms", property(lambda self: 1e-3))
    assert any(c.startswith("kernelbench.eval.portable.timing.Timing.median_ms was replaced")
               for c in watch.changes())


def test_modules_loaded_after_the_snapshot_are_not_in_it():
    module = types.ModuleType("kernelbench._not_loaded_yet")
    module.value = 1
    watch = NamespaceWatch.take()
    module.value = 2
    assert watch.changes() == []
