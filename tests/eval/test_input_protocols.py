"""The input protocols of the timed loop (portable.timing): the score's calls get new values in the same tensors
("buffers"), and a short loop under each other protocol ("tensors": new tensors; "same": the same tensors and
values) shows how a call's speed depends on its inputs' identity. Checked on the CPU, where a sample is the host's
time: a stand-in candidate that pays a plan's cost on every pointer it has not seen."""

from __future__ import annotations

import time

import pytest
import torch

from kernelbench.eval.portable.fresh import Reservoir, freshen
from kernelbench.eval.portable.timing import PROTOCOLS, time_function

CPU = torch.device("cpu")
PLAN_S = 0.02


class PlanPerPointer:
    """Builds a 'plan' (a sleep) the first time it meets an input tensor, then reads the inputs' values. (Keyed on
    the tensor object rather than its address: an allocator hands a freed address back, so a plan keyed on a
    pointer is stale for some new tensors and not others.)"""

    def __init__(self):
        self.plans: list[torch.Tensor] = []
        self.pointers_seen: list[int] = []

    def __call__(self, x):
        self.pointers_seen.append(x.data_ptr())
        if not any(x is planned for planned in self.plans):
            time.sleep(PLAN_S)
            self.plans.append(x)
        return x * 2


def _sets(n=2):
    return [[torch.arange(64.0) + 100 * k] for k in range(n)]


def _timed(fn, sets, protocol, compare, kept):
    expected = [s[0] * 2 for s in sets]

    def validate(out, k):
        return [] if torch.equal(out, expected[k]) else [f"set {k}: wrong output"]

    reservoir = Reservoir(kept, lambda out: out.clone())
    timing = time_function(fn, sets, CPU, warmup=2, trials=6, max_trials=6, validate=validate, fresh=reservoir,
                           protocol=protocol, compare_trials=compare)
    return timing, reservoir


def test_the_score_writes_new_values_into_the_same_tensors():
    fn, sets = PlanPerPointer(), _sets()
    timing, reservoir = _timed(fn, sets, "buffers", 0, kept=64)
    # every call met the first set's tensors (the memoisation probe last, on them too): one plan, made once
    assert set(fn.pointers_seen) == {sets[0][0].data_ptr()} and len(fn.plans) == 1
    assert timing.protocol == "buffers" and set(timing.protocols) == {"buffers"}
    assert timing.median_ms < PLAN_S * 1e3 / 2        # the plans were made once, in the warm-up
    # every call's values were new: each kept output is the call's permutation of its base set, doubled
    for kept in reservoir.kept:
        assert torch.equal(kept.output, freshen(_sets()[kept.base], kept.seed)[0] * 2)
    assert len({k.seed for k in reservoir.kept}) == len(reservoir.kept)


def test_the_sets_hold_their_own_values_again_after_timing():
    sets = _sets()
    before = [s[0].clone() for s in sets]
    _timed(PlanPerPointer(), sets, "buffers", 2, kept=4)
    assert torch.equal(sets[1][0], before[1])
    assert torch.equal(sets[0][0], before[1])  # the memoisation probe's in-place change, made on the sets' own values


def test_each_other_protocol_is_timed_and_shows_a_plan_keyed_on_pointers():
    fn = PlanPerPointer()
    timing, _ = _timed(fn, _sets(), "buffers", 4, kept=4)
    assert set(timing.protocols) == set(PROTOCOLS)
    figures = timing.protocols
    assert figures["tensors"].median_ms > PLAN_S * 1e3 * 0.9   # a new tensor, a new plan, every call
    assert figures["buffers"].median_ms < PLAN_S * 1e3 / 2
    assert figures["same"].median_ms < PLAN_S * 1e3 / 2
    assert figures["tensors"].samples == 4 and figures["same"].method == "events"


def test_sets_of_another_layout_keep_their_own_tensors_and_get_new_values():
    fn = PlanPerPointer()
    sets = [[torch.arange(64.0)], [torch.arange(32.0)]]
    pristine = [[s[0].clone()] for s in sets]
    _, reservoir = _timed(fn, sets, "buffers", 0, kept=64)
    assert {p for p in fn.pointers_seen} >= {sets[0][0].data_ptr(), sets[1][0].data_ptr()}
    assert {k.base for k in reservoir.kept} == {0, 1}
    for kept in reservoir.kept:  # every fresh call computed on its fresh values, whichever tensors held them
        assert torch.equal(kept.output, freshen(pristine[kept.base], kept.seed)[0] * 2)


def test_scalars_of_a_set_travel_with_its_values():
    """Sets may differ in their non-tensor inputs; a call on set k's values gets set k's scalars too."""
    seen = []

    def scaled(x, factor):
        seen.append(factor)
        return x * factor

    sets = [[torch.arange(16.0), 2.0], [torch.arange(16.0) + 5, 3.0]]
    pristine = [[s[0].clone(), s[1]] for s in sets]
    reservoir = Reservoir(64, lambda out: out.clone())
    time_function(scaled, sets, CPU, warmup=2, trials=6, max_trials=6, fresh=reservoir)
    for kept in reservoir.kept:
        assert torch.equal(kept.output, freshen(pristine[kept.base], kept.seed)[0] * pristine[kept.base][1])
    assert set(seen) == {2.0, 3.0}


def test_the_same_protocol_calls_the_first_set_every_time():
    fn = PlanPerPointer()
    sets = _sets(3)
    timing, _ = _timed(fn, sets, "buffers", 4, kept=4)
    same_calls = fn.pointers_seen[-(3 + 4 + 1):-1]   # the "same" loop ran last; the memoisation probe after it
    assert set(same_calls) == {sets[0][0].data_ptr()}


def test_a_wrong_output_under_the_same_tensors_is_refused():
    """The "same" loop's outputs are judged like any validated call: a call that is right only on new values
    (here: wrong whenever it meets a pointer twice) fails the timing."""
    from kernelbench.eval.portable.timing import TimedOutputInvalid

    seen: set[int] = set()

    def wrong_on_reuse(x):
        out = x * 2 if x.data_ptr() not in seen else x * 3
        seen.add(x.data_ptr())
        return out

    with pytest.raises(TimedOutputInvalid):
        _timed(wrong_on_reuse, _sets(), "tensors", 2, kept=0)


def test_an_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="unknown input protocol"):
        _timed(PlanPerPointer(), _sets(), "pinned", 0, kept=0)
