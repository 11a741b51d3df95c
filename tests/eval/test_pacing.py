"""The grader's clock (kernelbench/eval/pacing.py) and the fingerprint it takes of every paced call's output
(portable/fresh.py), with the verdicts drawn from them (eval/verdict.py)."""

from __future__ import annotations

import threading

import torch

from kernelbench.eval import verdict
from kernelbench.eval.pacing import PacedCall, PacedShape, PacerClient, open_pacer
from kernelbench.eval.portable.fresh import fingerprint
from kernelbench.eval.protocol import CaseVerdict, KeptCall


def test_the_fingerprint_needs_every_bit_of_the_output():
    out = torch.randn(64, 33)
    fp = fingerprint(out, 12345)
    assert fp == fingerprint(out.clone(), 12345)             # the same bits, the same value
    assert fp != fingerprint(out, 12346)                     # another weight
    nudged = out.clone()
    nudged.view(torch.int32)[17, 5] ^= 1                     # one bit of one element
    assert fingerprint(nudged, 12345) != fp
    assert fingerprint(out.t().contiguous().t(), 7) == fingerprint(out, 7)  # the layout is not the value
    assert -(1 << 63) <= fp < 1 << 63                        # fits the pacer's signed 64-bit field
    pair = (torch.ones(3, dtype=torch.bfloat16), torch.arange(5))
    assert fingerprint(pair, 1) != fingerprint((pair[1], pair[0]), 1)


def test_the_fingerprint_has_no_linear_structure_to_solve_and_leaves_its_input_alone():
    """A commitment a candidate can meet by nudging a right answer must not be linear in the output: the change a
    nudge makes depends on everything else in the output, and two nudges do not add up."""
    gen = torch.Generator().manual_seed(7)
    x, y = torch.randn(256, generator=gen), torch.randn(256, generator=gen)
    kept = x.clone()

    def nudged(t, *where):
        t = t.clone()
        for i in where:
            t.view(torch.int32)[i] += 1
        return t

    def change(t, *where):
        return (fingerprint(nudged(t, *where), 99) - fingerprint(t, 99)) % (1 << 64)

    assert change(x, 3) != change(y, 3)                                   # the same nudge, other outputs
    assert change(x, 3, 200) != (change(x, 3) + change(x, 200)) % (1 << 64)  # nudges do not add
    assert torch.equal(x, kept)                                           # read, never written
    words = torch.arange(8, dtype=torch.int64)
    assert fingerprint(words, 1) != fingerprint(words.flip(0), 1)        # position matters


def test_a_paced_loop_is_stamped_and_kept_calls_are_the_grader_s_choice():
    pacer, theirs = open_pacer(kept_per_shape=2)
    client = PacerClient(theirs.detach())
    nonces = []
    for _ in range(20):
        nonces.append(client.ready(3))
        weight = client.done(3)
        slot = client.commit(3, fingerprint(torch.full((4,), float(len(nonces))), weight))
        assert -1 <= slot < 2
    client.sock.close()
    pacer.join(timeout=5)
    shape = pacer.shapes[3]
    assert [c.nonce for c in shape.calls] == nonces and len(set(nonces)) == 20
    assert all(c.span_ms is not None and c.span_ms >= 0 for c in shape.calls)
    assert len(shape.kept) == 2 and not pacer.violations


def test_messages_out_of_order_are_violations():
    pacer, theirs = open_pacer(kept_per_shape=1)
    client = PacerClient(theirs.detach())
    assert client.commit(0, 5) == -1                          # a commitment before any call
    client.ready(0)
    client.ready(0)                                           # a second call before the first was committed
    client.sock.close()
    pacer.join(timeout=5)
    assert len(pacer.violations) == 2


def _shape(spans_ms: list[float]) -> PacedShape:
    shape = PacedShape(2)
    for i, ms in enumerate(spans_ms):
        shape.calls.append(PacedCall(i + 1, 100 + i, 0, 1, 7, int(ms * 1e6), 0))
    return shape


def test_the_floor_follows_the_shortest_span_less_the_overheads_and_its_ratio():
    shape = _shape([41.0, 40.0, 45.0, 90.0])                  # contention lengthens spans; the shortest counts
    # floor = min(0.25 x (40 - 10 x 0.5) - 0.01, 40 / 20) = min(8.74, 2.0) = 2.0 ms
    assert verdict.paced_timing_findings(0, 2.01, 3, shape, overhead_ms=0.5) == []
    assert len(verdict.paced_timing_findings(0, 1.99, 3, shape, overhead_ms=0.5)) == 1
    # floor = min(0.25 x (40 - 10 x 3.5) - 0.01, 2.0) = 1.24 ms: the overhead rule is the lesser here
    assert verdict.paced_timing_findings(0, 1.25, 3, shape, overhead_ms=3.5) == []
    assert len(verdict.paced_timing_findings(0, 1.23, 3, shape, overhead_ms=3.5)) == 1
    [found] = verdict.paced_timing_findings(0, 0.02, 3, shape, overhead_ms=0.5)
    assert (found.check, found.klass, found.severity) == ("external_clock", 11, "error")
    assert "shortest of 4 calls" in found.evidence and "0.5000 ms" in found.evidence
    assert verdict.paced_timing_findings(0, 0.001, 3, _shape([1.0] * 4), overhead_ms=0.1) == []  # within overhead


def test_a_second_timing_s_finding_says_so_and_a_settled_suspicion_is_a_warning_with_the_first_evidence():
    shape = _shape([41.0, 40.0, 45.0, 90.0])
    [again] = verdict.paced_floor_findings(2, 0.02, shape, 0.5, again=True)
    assert again.message.startswith("shape 2: timed again, the published median 0.0200 ms")
    assert verdict.paced_floor_findings(2, 0.02, shape, None) == []          # no overhead measured: no floor
    assert verdict.paced_count_findings(2, 0.02, 5, shape) != []            # 5 reported, 4 paced
    [first] = verdict.paced_floor_findings(2, 0.02, shape, 0.5)
    [settled] = verdict.clock_settled_findings(2, [first], 38.5)
    assert (settled.check, settled.klass, settled.severity) == ("external_clock", 11, "warning")
    assert "38.5000 ms" in settled.message and "shortest of 4 calls" in settled.evidence


def test_timed_calls_the_grader_never_saw_are_refused():
    [found] = verdict.paced_timing_findings(1, 1.0, 5, _shape([2.0, 2.0]), overhead_ms=0.1)
    assert "never saw happen" in found.message
    [found] = verdict.paced_timing_findings(1, 1.0, 5, None, overhead_ms=None)
    assert "saw 0 calls" in found.message


def test_kept_calls_must_be_the_grader_s_on_its_nonces_and_committed():
    shape = _shape([1.0, 1.0, 1.0])
    shape.kept = [shape.calls[0], shape.calls[2]]
    claimed = [KeptCall(case="c", seed=100, call=1, of=3, file="a"), KeptCall(case="c", seed=102, call=3, of=3, file="b")]
    records, found = verdict.paced_kept_findings(0, claimed, shape)
    assert not found and [(r.weight, r.fingerprint) for r in records] == [(7, 0), (7, 0)]
    _, found = verdict.paced_kept_findings(0, [claimed[0], claimed[1].model_copy(update={"call": 2})], shape)
    assert "not the ones the grader chose" in found[0].message
    _, found = verdict.paced_kept_findings(0, [claimed[0].model_copy(update={"seed": 9}), claimed[1]], shape)
    assert "inputs the grader drew" in found[0].message
    assert verdict.commitment_findings(records[0], CaseVerdict(fingerprint=0)) == []
    [found] = verdict.commitment_findings(records[0], CaseVerdict(fingerprint=1))
    assert "not the output the call committed to" in found.message


def test_the_pacer_answers_over_a_real_process_boundary(tmp_path):
    """The client's end crosses a fork, as it crosses into the bench stage's process."""
    import os

    pacer, theirs = open_pacer(kept_per_shape=1)
    pid = os.fork()
    if pid == 0:
        client = PacerClient(theirs.fileno())
        client.commit(0, fingerprint(torch.zeros(2), client.done(0)) if client.ready(0) else 0)
        os._exit(0)
    theirs.close()
    os.waitpid(pid, 0)
    done = threading.Event()
    threading.Thread(target=lambda: (pacer.join(timeout=5), done.set())).start()
    pacer.stop()
    assert done.wait(10) and pacer.shapes[0].calls[0].committed_ns is not None
