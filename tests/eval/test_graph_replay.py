"""Measuring must not change what the candidate does: the grader's CUDA graphs of a call are used only when
replaying them is what calling the candidate does (portable.timing.faithful_graphs), and the memoisation probe is
an eager call. The graphs here are stand-ins (replay() is a Python callable), so the rule is checked on the CPU; the
real capture of a stateful candidate is graded on the GPU (tests/integrity/accepted/04_own_graph_per_pointer.py)."""

from __future__ import annotations

import torch

from kernelbench.eval.portable.timing import Timing, faithful_graphs, probe_memoisation

CPU = torch.device("cpu")


class Replay:
    """A stand-in for a captured graph: replay() runs `work` (what the capture recorded)."""

    def __init__(self, work):
        self.work = work

    def replay(self):
        self.work()


def _sets():
    return [[torch.arange(4.0)], [torch.arange(4.0) * 10]]


def _validate(sets_values):
    expected = [v[0] * 2 for v in sets_values]
    return lambda out, k: [] if torch.equal(out, expected[k]) else [f"set {k}: got {out.tolist()}"]


def test_graphs_that_replay_the_call_are_kept():
    sets = _sets()
    validate = _validate([[s[0].clone()] for s in sets])
    outs = [torch.empty(4), torch.empty(4)]
    graphs = [(Replay(lambda k=k: outs[k].copy_(sets[k][0] * 2)), outs[k]) for k in range(2)]
    timing = Timing(method="cuda_graph")
    assert faithful_graphs(graphs, sets, 2, CPU, validate, timing) is graphs
    assert timing.method == "cuda_graph" and not timing.notes
    assert torch.equal(sets[0][0], torch.arange(4.0))  # the in-place probe put the base values back


def test_a_stale_graph_of_a_stateful_candidate_is_dropped_with_a_note():
    """The candidate hands back a buffer it keeps while a capture is under way: the graph recorded nothing, and
    replaying it returns whatever the buffer last held."""
    sets = _sets()
    validate = _validate([[s[0].clone()] for s in sets])
    kept = [sets[k][0] * 2 for k in range(2)]  # what its own eager warm-up calls left in its buffers
    graphs = [(Replay(lambda: None), kept[k]) for k in range(2)]
    timing = Timing(method="cuda_graph")
    assert faithful_graphs(graphs, sets, 2, CPU, validate, timing) is None
    assert timing.method == "events" and "timed eagerly" in timing.notes[0] and "in place" in timing.notes[0]


def test_the_memo_probe_is_eager_whatever_was_replayed():
    sets = _sets()
    validate = _validate([[s[0].clone()] for s in sets])
    stale = [(Replay(lambda: None), sets[0][0] * 2)]
    assert probe_memoisation(lambda x: x * 2, sets, stale, CPU, validate) == "ok"
    sets = _sets()
    cache = {}
    memo = lambda x: cache.setdefault(x.data_ptr(), x * 2)  # noqa: E731  (a cache keyed by pointer)
    memo(sets[0][0])
    assert probe_memoisation(memo, sets, None, CPU, validate).startswith("stale")
