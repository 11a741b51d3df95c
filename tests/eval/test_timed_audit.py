"""Secret windows of recorded timed calls (portable.timing.TimedAudit) and the worker's draw of them."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import torch

from kernelbench.eval.portable.timing import TimedAudit, time_function
from kernelbench.eval.worker.audit import AUDIT_WINDOW_CALLS, AUDIT_WINDOWS, timed_audit
from tests.eval.conftest import bench_context

CPU = torch.device("cpu")
KAHAN = Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"


def _recorded_calls():
    """A function that logs each call, and a recorder in the worker's shape: a dict filled as it exits, with a
    name of its own (what the grader launches around every call) on top of the calls it saw."""
    log: list[str] = []

    def fn(x):
        log.append(f"call{len(log) + 1}")
        return x * 2

    @contextmanager
    def recorder():
        names: dict[str, float] = {}
        start = len(log)
        yield names
        names.update({name: 1.0 for name in log[start:]})
        names["grader_fill"] = 0.0

    return fn, recorder


def test_a_window_records_its_calls_and_leaves_them_out_of_the_samples():
    fn, recorder = _recorded_calls()
    audit = TimedAudit(recorder, starts={2}, length=3)
    timing = time_function(fn, [[torch.ones(4)]], CPU, warmup=1, trials=5, max_trials=5, audit=audit)
    assert len(timing.samples_ms) == 5 and audit.audited == 3
    # warmup is call1, the trial loop's calls are call2...call9; its third opens the window
    assert audit.launches == {"call4": 1.0, "call5": 1.0, "call6": 1.0}
    assert audit.grader_names == {"grader_fill"}


def test_a_window_still_open_when_the_loop_ends_is_closed_and_kept():
    fn, recorder = _recorded_calls()
    audit = TimedAudit(recorder, starts={4}, length=10)
    time_function(fn, [[torch.ones(4)]], CPU, warmup=1, trials=5, max_trials=5, audit=audit)
    assert "call6" in audit.launches and audit.audited >= 1


def test_the_worker_draws_windows_from_the_secret_seed_within_the_trials(tmp_path):
    def ctx(seed):
        return bench_context(tmp_path, KAHAN, rotation_seed=seed, trials=30)

    draws = {frozenset(timed_audit(ctx(seed), 0).starts) for seed in range(40)}
    assert len(draws) > 10  # the windows move with the secret
    shortest = 30 + AUDIT_WINDOWS * AUDIT_WINDOW_CALLS  # the samples plus the audited calls, left out of them
    for starts in draws:
        first = sorted(s for s in starts if s < shortest)
        assert len(first) == AUDIT_WINDOWS  # a loop that stops at its trials meets every first window
        assert all(s + AUDIT_WINDOW_CALLS <= shortest for s in first)
        assert all(b - a >= AUDIT_WINDOW_CALLS for a, b in zip(first, first[1:]))  # windows never overlap
        assert max(starts) > 10 * shortest  # and a long loop meets windows all along
    assert timed_audit(ctx(7), 0).starts == timed_audit(ctx(7), 0).starts
    # each shape draws its own windows
    assert any(timed_audit(ctx(seed), 0).starts != timed_audit(ctx(seed), 1).starts for seed in range(10))


def test_a_window_that_records_nothing_is_counted_blind():
    @contextmanager
    def blinded():
        yield {}  # a recorder whose buffers someone else took: nothing comes back

    audit = TimedAudit(blinded, starts={0, 5}, length=2)
    time_function(lambda x: x + 1, [[torch.ones(4)]], CPU, warmup=1, trials=6, max_trials=6, audit=audit)
    assert audit.blind_windows == 2 and audit.launches == {}


def test_a_working_recorder_is_never_counted_blind():
    fn, recorder = _recorded_calls()
    audit = TimedAudit(recorder, starts={0, 3}, length=2)
    time_function(fn, [[torch.ones(4)]], CPU, warmup=1, trials=6, max_trials=6, audit=audit)
    assert audit.blind_windows == 0


def test_every_call_of_the_loop_may_be_watched():
    """Over many secrets, each call of the loop's first stretch and of a later one falls in some window: no call
    number is safe to misbehave at."""
    import random

    from kernelbench.eval.worker.audit import audit_window_starts

    watched = set()
    for seed in range(200):
        for start in audit_window_starts(random.Random(seed), 30 + AUDIT_WINDOWS * AUDIT_WINDOW_CALLS, 600):
            watched.update(range(start, start + AUDIT_WINDOW_CALLS))
    assert set(range(600)) <= watched


def test_stress_calls_stretch_the_blocks(tmp_path):
    """With three stress sets to each base set, the loop's shortest length is four times as many calls: the three
    first windows spread over all of it instead of crowding its first quarter."""
    def ctx(seed):
        return bench_context(tmp_path, KAHAN, rotation_seed=seed, trials=30)

    shortest = 4 * (30 + AUDIT_WINDOWS * AUDIT_WINDOW_CALLS)
    firsts = [sorted(s for s in timed_audit(ctx(seed), 0, 4.0).starts if s < shortest) for seed in range(40)]
    assert all(len(f) == AUDIT_WINDOWS for f in firsts)
    assert max(f[-1] for f in firsts) > shortest // 2
