"""Fresh inputs for every timed call (portable.fresh) and the judge's check of the kept ones."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import torch

from kernelbench.eval.portable.fresh import Reservoir, draw_seed, freshen
from kernelbench.eval.portable.timing import time_function
from kernelbench.problems.loader import load_module

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


def _base_set() -> list:
    gen = torch.Generator().manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(2, 5, 3, 8, generator=gen), dim=-1)
    return [q, torch.randint(0, 9, (4, 3), generator=gen), torch.randn(1, 64, generator=gen).to(torch.bfloat16),
            torch.randn(6, 1, generator=gen), 0.5]


def test_freshen_is_deterministic_in_its_seed_and_new_for_another():
    base = _base_set()
    a, b, c = freshen(base, 11), freshen(base, 11), freshen(base, 12)
    for x, y in zip(a[:4], b[:4]):
        assert torch.equal(x, y)
    assert not torch.equal(a[0], c[0]) and not torch.equal(a[2], c[2])


def test_freshen_keeps_layout_integers_norms_and_values():
    base = _base_set()
    fresh = freshen(base, 3)
    for x, y in zip(base[:4], fresh[:4]):
        assert (x.shape, x.dtype, x.stride()) == (y.shape, y.dtype, y.stride())
        assert torch.equal(torch.sort(x.flatten().float()).values, torch.sort(y.flatten().float()).values)
    assert torch.equal(fresh[1], base[1])  # integer structure (block tables, offsets) is kept
    assert fresh[4] == 0.5
    # each vector's norm survives: the q, k of attention problems stay unit vectors
    assert torch.allclose(fresh[0].norm(dim=-1), torch.ones(2, 5, 3))
    assert not torch.equal(fresh[2], base[2])  # a single-row input is fresh too (its elements move)


def test_freshen_moves_float8_bytes():
    x = torch.randn(16, 32).to(torch.float8_e4m3fn)
    y = freshen([x], 5)[0]
    assert y.dtype == torch.float8_e4m3fn
    sort = lambda t: torch.sort(t.view(torch.uint8).flatten()).values  # noqa: E731
    assert torch.equal(sort(x), sort(y))


def test_reservoir_keeps_every_call_equally_often():
    counts = [0] * 10
    runs = 4000
    for _ in range(runs):
        reservoir = Reservoir(2, copy=lambda out: out)
        for call in range(10):
            reservoir.offer(0, draw_seed(), call)
        assert len(reservoir.kept) == 2 and reservoir.offered == 10
        for kept in reservoir.kept:
            counts[kept.output] += 1
    # each call is kept with probability 2/10; six standard deviations is about 0.038
    assert max(abs(c / runs - 0.2) for c in counts) < 0.04, counts


def _content_memo():
    """The neutralised exploit's own Model (tests/integrity/neutralised/07_memo_content_key.py) on a small shape."""
    module = load_module(ROOT / "tests/integrity/neutralised/07_memo_content_key.py", "memo_content_key")
    model = module.Model(N=8, K=64, group_size=32)
    gen = torch.Generator().manual_seed(1)
    sets = [[torch.randn(3, 64, generator=gen).to(torch.bfloat16)] for _ in range(2)]
    return model, sets


def test_a_content_keyed_memo_hits_on_the_old_rotation():
    model, sets = _content_memo()
    time_function(model, sets, CPU, warmup=2, trials=6, max_trials=6)
    assert len(model.kept) < 8  # the timed calls found earlier answers: the exploit the fresh inputs stop


def test_fresh_inputs_make_a_content_keyed_memo_compute_every_call():
    model, sets = _content_memo()
    reservoir = Reservoir(2, copy=lambda out: out.clone())
    timing = time_function(model, sets, CPU, warmup=2, trials=6, max_trials=6, fresh=reservoir)
    assert len(timing.samples_ms) == 6 and reservoir.offered == 8
    # every warmup and timed call stored an answer of its own: none was a lookup
    assert len(model.kept) == reservoir.offered


def test_kept_outputs_are_the_calls_on_the_inputs_the_seed_rebuilds():
    weight = torch.randn(5, 7)

    def fn(x):
        return x @ weight.t()

    sets = [[torch.randn(4, 7)], [torch.randn(4, 7)]]
    reservoir = Reservoir(3, copy=lambda out: out.clone())
    time_function(fn, sets, CPU, warmup=1, trials=5, max_trials=5, fresh=reservoir)
    assert len(reservoir.kept) == 3
    for kept in reservoir.kept:
        rebuilt = freshen(sets[kept.base], kept.seed)
        assert torch.equal(kept.output, fn(*rebuilt))
        assert not any(torch.equal(kept.output, fn(*s)) for s in sets)


def test_stress_calls_stay_validated_in_place_and_fresh_calls_are_not():
    seen: list[int] = []

    def validate(out, k):
        seen.append(k)
        return []

    sets = [[torch.randn(4, 7)]]
    stress = [[torch.randn(4, 7)]]
    time_function(lambda x: x * 2, sets, CPU, warmup=1, trials=4, max_trials=4, validate=validate,
                  stress_sets=stress, rotation_seed=3, fresh=Reservoir(1, copy=lambda out: out))
    assert seen and set(seen) == {1}  # only the stress set's calls; the replay probe needs two base sets


@pytest.mark.parametrize("keep", [0, 2])
def test_timing_samples_are_unchanged_in_number_by_fresh_inputs(keep):
    sets = [[torch.randn(8, 8)] for _ in range(2)]
    timing = time_function(lambda x: x.sum(dim=-1), sets, CPU, warmup=2, trials=5, max_trials=5,
                           fresh=Reservoir(keep, copy=lambda out: out))
    assert len(timing.samples_ms) == 5 and statistics.median(timing.samples_ms) > 0


class _ReplayedGraph:
    """A CUDA graph's contract on the CPU: replay recomputes from the buffers it was captured on, into one output."""

    def __init__(self, fn, buffers: list):
        self.fn, self.buffers = fn, buffers
        self.out = fn(*buffers).clone()

    def replay(self) -> None:
        self.out.copy_(self.fn(*self.buffers))


def test_the_replay_probe_of_graphed_fresh_calls_sees_the_base_sets_again():
    """Graphed calls copy fresh values into the graphs' fixed buffers; the replay probe afterwards copies base set 1
    into set 0 and expects set 1's output, so the buffers must hold the base sets' own values by then (an honest
    kernel timed by graph replay was reported as a class 7 memo when they still held the last permutations)."""
    from kernelbench.eval.portable.timing import Rotation, Sample, TimedCalls, probe_memoisation

    def fn(x):
        return x.cumsum(-1)

    gen = torch.Generator().manual_seed(1)
    sets = [[torch.randn(3, 16, generator=gen)] for _ in range(2)]
    expected = [fn(*s).clone() for s in sets]

    def validate(out, k):
        return [] if torch.allclose(out, expected[k]) else [f"set {k} differs"]

    calls = TimedCalls(fn, sets, Rotation(2), Reservoir(0, lambda out: out), validate)
    graphs = [(g, g.out) for g in (_ReplayedGraph(fn, s) for s in sets)]
    calls.use_graphs(graphs)
    for k in (0, 1, 0, 1):
        calls.run(k, lambda launch: (Sample(0.0, 0.0), launch()))
    assert not torch.equal(sets[1][0], calls.pristine[1][0])  # the buffers hold a permutation now
    calls.restore_base_sets()
    assert probe_memoisation(fn, sets, graphs, CPU, validate) == "ok"
