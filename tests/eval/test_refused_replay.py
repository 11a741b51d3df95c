"""A refused timed call made again outside the timed loop (worker.bench.replay_refused_call), and what the verdict
makes of it (verdict.timing_failure_findings, timed_output_wrong): an answer kept across calls (a wrong output bit
for bit another input's answer) is memoisation, INVALID (class 7); state keyed on the tensors' identity that makes a
wrong output, a kernel wrong on the values after earlier calls, or one wrong only inside the loop, fails its checks
with a lead where there is one, and is never called a cheat on that alone. The loop writes values in place as any
in-place operation does (the version counter moves), so state kept under identity and version is honest."""

from __future__ import annotations

import torch

from kernelbench.eval.protocol import RefusedCallReplay, ShapeTiming
from kernelbench.eval.verdict import timed_output_wrong, timing_failure_findings
from tests.eval.test_timed_judging import REF, Honest, _bench_ctx


class VersionKeyedCache(Honest):
    """Keeps its last answer under the input tensor's identity and version counter, as a padded-copy or packed-
    input cache does: right whenever a new tensor or an in-place write comes (every in-place write moves the
    counter), stale only when values change behind the counter's back (a write through `.data`)."""

    def __init__(self, vocab: int):
        super().__init__(vocab)
        self.key, self.answer = None, None

    def forward(self, x):
        key = (id(x), x._version)
        if key != self.key:
            self.key, self.answer = key, super().forward(x)
        return self.answer


class PointerKeyedAnswer(torch.nn.Module):
    """Keeps each answer under the input's pointer alone and computes as the reference does: after the loop writes
    other values into a buffer it has seen, it returns the buffer's earlier answer, bit for bit."""

    def __init__(self, vocab: int):
        super().__init__()
        self.ref = REF.Model(**REF.get_init_kwargs({"rows": 4, "vocab": vocab}))
        self.answers: dict[int, torch.Tensor] = {}

    def forward(self, x):
        if x.data_ptr() not in self.answers:
            self.answers[x.data_ptr()] = self.ref(x)
        return self.answers[x.data_ptr()]


class PointerKeyedNorm(Honest):
    """Keeps each row's normaliser (a stand-in for a launch plan or a schedule) under the input's pointer and
    computes the rest from the values it is given: stale after an in-place write, a wrong output that is no
    input's answer."""

    def __init__(self, vocab: int):
        super().__init__(vocab)
        self.norms: dict[int, torch.Tensor] = {}

    def forward(self, x):
        e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
        norm = self.norms.setdefault(x.data_ptr(), e.sum(dim=-1, keepdim=True))
        return (e / norm).float()


class DriftsAfterManyCalls(Honest):
    """An honest-looking state bug: a scratch term it never resets grows past the tolerance after a few calls, on
    any input and in any tensor, while a model built afresh is right again."""

    def __init__(self, vocab: int):
        super().__init__(vocab)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = super().forward(x)
        return out + (0.5 if self.calls > 4 else 0.0)


class WrongWhileTimed(Honest):
    """Wrong on every call while `timed` is set: the test clears it as the replay starts, as a race that struck in
    the loop, or a candidate that cheats only while timed, leaves every call outside the loop right."""

    timed = True

    def forward(self, x):
        out = super().forward(x)
        return out + 1.0 if WrongWhileTimed.timed else out


def _bench(tmp_path, model_cls) -> ShapeTiming:
    from kernelbench.eval.worker.bench import bench_shape

    ctx, cases = _bench_ctx(tmp_path, model_cls)
    return bench_shape(ctx, 0, cases)


def test_a_cache_keyed_on_identity_and_version_is_honest_under_the_loops_in_place_writes(tmp_path):
    result = _bench(tmp_path, VersionKeyedCache)
    assert result.error is None and result.refused_replay is None and result.samples_ms
    assert result.memo_probe == "ok" and not timed_output_wrong(result)


def test_an_answer_kept_under_the_pointer_is_memoisation(tmp_path):
    result = _bench(tmp_path, PointerKeyedAnswer)
    assert "TimedOutputInvalid" in result.error
    replay = result.refused_replay
    assert replay is not None and replay.answer_of and replay.memoised
    [found] = timing_failure_findings(0, result.error, replay)
    assert (found.klass, found.severity, found.check) == (7, "error", "timed_output")
    assert "bit for bit" in found.message and replay.answer_of[0] in found.message
    assert not timed_output_wrong(result)  # INVALID, not a wrong output


def test_state_keyed_on_the_pointer_that_makes_a_wrong_output_fails_the_checks_with_a_lead(tmp_path):
    result = _bench(tmp_path, PointerKeyedNorm)
    assert "TimedOutputInvalid" in result.error
    replay = result.refused_replay
    assert replay is not None and replay.follows_identity and not replay.answer_of and not replay.memoised
    [found] = timing_failure_findings(0, result.error, replay)
    assert (found.klass, found.severity) == (7, "warning")
    assert "in the same tensors wrong" in found.evidence and "in new tensors right" in found.evidence
    assert timed_output_wrong(result)


def test_a_state_bug_reproduced_in_new_tensors_fails_the_checks_without_an_integrity_finding(tmp_path):
    result = _bench(tmp_path, DriftsAfterManyCalls)
    replay = result.refused_replay
    assert replay is not None and replay.same_tensors and replay.new_tensors and replay.new_model == []
    assert timing_failure_findings(0, result.error, replay) == []
    assert timed_output_wrong(result)


def test_a_wrong_output_only_inside_the_loop_is_a_wrong_output_with_a_lead(tmp_path, monkeypatch):
    from kernelbench.eval.worker import bench

    replay_refused_call = bench.replay_refused_call

    def outside_the_loop(*args):
        WrongWhileTimed.timed = False
        return replay_refused_call(*args)

    WrongWhileTimed.timed = True
    monkeypatch.setattr(bench, "replay_refused_call", outside_the_loop)
    result = _bench(tmp_path, WrongWhileTimed)
    replay = result.refused_replay
    assert replay is not None and not replay.reproduced
    [found] = timing_failure_findings(0, result.error, replay)
    assert (found.klass, found.severity) == (8, "warning")
    assert timed_output_wrong(result)


def test_an_honest_candidate_has_nothing_replayed(tmp_path):
    result = _bench(tmp_path, Honest)
    assert result.error is None and result.refused_replay is None


def test_a_refusal_without_a_replay_is_a_wrong_output_and_other_errors_are_not():
    refused = ShapeTiming(error="TimedOutputInvalid: timed call on input set 3: output: 1 of 8 elements")
    assert timing_failure_findings(0, refused.error, None) == [] and timed_output_wrong(refused)
    raised = ShapeTiming(error="RuntimeError: CUDA error: an illegal memory access")
    assert not timed_output_wrong(raised)
    replay = RefusedCallReplay(set_index=3, case="t0", same_tensors=["x"], new_tensors=[], new_model=None)
    [lead] = timing_failure_findings(0, refused.error, replay)
    assert replay.follows_identity and lead.severity == "warning" and "model built afresh not built" in lead.evidence
    assert timed_output_wrong(refused.model_copy(update={"refused_replay": replay}))



def test_a_wrong_output_that_is_another_inputs_answer_bit_for_bit_is_memoisation():
    from kernelbench.eval.worker.bench import answer_of_another_set

    answers = [torch.arange(6.0).reshape(2, 3), torch.ones(2, 3), torch.zeros(2, 3)]
    assert answer_of_another_set(torch, answers[1].clone(), answers, 0) == [1]
    assert answer_of_another_set(torch, answers[1].clone(), answers, 1) == []  # its own answer is not another's
    assert answer_of_another_set(torch, answers[1] + 1e-6, answers, 0) == []  # close is not the same answer
    assert answer_of_another_set(torch, answers[1].double(), answers, 0) == []
    replay = RefusedCallReplay(set_index=0, case="t0", same_tensors=["x"], new_tensors=["x"], new_model=[],
                               answer_of=["b1"])
    refused = ShapeTiming(error="TimedOutputInvalid: timed call on input set 0: wrong", refused_replay=replay)
    [found] = timing_failure_findings(0, refused.error, replay)
    assert (found.klass, found.severity) == (7, "error") and "b1" in found.message
    assert not timed_output_wrong(refused)
