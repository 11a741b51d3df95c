"""A wrong output on fresh inputs (a base set permuted just before a timed call), judged by the trusted fresh
stage: the answer to inputs an earlier call saw (the base set's own, or the base set under an earlier timed call's
permutation) is an answer kept across calls (memoisation, class 7, INVALID: `worker.fresh.against_earlier_answers`);
any other wrong output fails the checks with a lead (class 8, a warning: `verdict.fresh_verdict_findings`), since a
race or a bug on those values gives it too."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from kernelbench.eval.portable.fresh import freshen
from kernelbench.eval.protocol import Case, CaseVerdict, KeptCall
from kernelbench.eval.tensorfile import save_tensors
from kernelbench.eval.pacing import PacedCall
from kernelbench.eval.verdict import EARLIER_CALLS, earlier_calls, fresh_verdict_findings
from kernelbench.eval.worker.fresh import against_earlier_answers
from kernelbench.eval.worker.judge import Expected

CASE = Case(id="b0", shape_index=0, shape={"rows": 8, "vocab": 64}, public_seed=0, seed=0)
RECORD = KeptCall(case="b0", seed=7, call=3, of=20, file="kept.kbt")


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1).float()


def judge_stand_in() -> SimpleNamespace:
    comparer = SimpleNamespace(tolerance_of=lambda case: {"float32": {"atol": 1e-5, "rtol": 1e-5}}, index_outputs=[])
    return SimpleNamespace(ctx=SimpleNamespace(torch=torch, job=SimpleNamespace(device="cpu")), comparer=comparer)


def judged_kept(tmp_path, output_of, earlier: list[tuple[int, int]] = ()) -> CaseVerdict:
    base = [torch.randn(8, 64, generator=torch.Generator().manual_seed(1))]
    fresh = freshen(base, RECORD.seed)
    path = tmp_path / "kept.kbt"
    save_tensors(path, [output_of(base, fresh)], single=True)
    verdict = CaseVerdict(passed=False, messages=["output: 512 of 512 elements out of tolerance"])
    against_earlier_answers(judge_stand_in(), CASE, softmax, base, list(earlier),
                            Expected(inputs=fresh, expected=softmax(fresh[0])), path, verdict)
    return verdict


def test_the_answer_to_the_unpermuted_base_set_is_a_kept_answer(tmp_path):
    verdict = judged_kept(tmp_path, lambda base, fresh: softmax(base[0]))
    assert verdict.matches_earlier_answer and "within tolerance" in verdict.earlier_answer
    [found] = fresh_verdict_findings(CASE, RECORD, verdict)
    assert (found.check, found.klass, found.severity) == ("fresh_inputs", 7, "error")
    assert "within tolerance of the answer to its base set's inputs unpermuted" in found.evidence


def test_the_answer_to_an_earlier_calls_permutation_is_a_kept_answer(tmp_path):
    """A key blind to element order finds the answer of the first call on the base set: that call's seed is in the
    grader's record, so the judge rebuilds its inputs and finds the output is their answer."""
    earlier = [(1, 11), (2, 22), (3, 33)]
    verdict = judged_kept(tmp_path, lambda base, fresh: softmax(freshen(base, 22)[0]), earlier)
    assert verdict.matches_earlier_answer
    assert verdict.earlier_answer.startswith("within tolerance of the answer to its base set under timed call 2's")
    [found] = fresh_verdict_findings(CASE, RECORD, verdict)
    assert (found.klass, found.severity) == (7, "error") and "timed call 2's permutation" in found.evidence


def test_an_earlier_call_missing_from_the_record_is_not_guessed(tmp_path):
    verdict = judged_kept(tmp_path, lambda base, fresh: softmax(freshen(base, 44)[0]), [(1, 11), (2, 22)])
    assert not verdict.matches_earlier_answer and verdict.earlier_answer.startswith("not the answer")
    assert fresh_verdict_findings(CASE, RECORD, verdict)[0].severity == "warning"


def test_the_earlier_calls_are_the_first_and_the_latest_of_the_graders_record():
    calls = [PacedCall(n, 1000 + n, 0) for n in range(1, 21)]
    chosen = earlier_calls(calls, 15)
    numbers = [n for n, _ in chosen]
    assert numbers == list(range(1, EARLIER_CALLS + 1)) + list(range(15 - EARLIER_CALLS, 15))
    assert all(seed == 1000 + n for n, seed in chosen)
    assert [n for n, _ in earlier_calls(calls, 3)] == [1, 2]  # fewer calls before it than asked: each once


def test_another_wrong_output_fails_the_checks_with_a_lead(tmp_path):
    verdict = judged_kept(tmp_path, lambda base, fresh: torch.full_like(fresh[0], 1 / 64))  # uniform rows
    assert not verdict.matches_earlier_answer and verdict.earlier_answer.startswith("not the answer")
    [found] = fresh_verdict_findings(CASE, RECORD, verdict)
    assert (found.check, found.klass, found.severity) == ("fresh_inputs", 8, "warning")


def test_an_answer_the_permutation_does_not_change_tells_nothing(tmp_path):
    def total(x):  # the same for every ordering of the rows and of the elements within them
        return x.double().sum().reshape(1).float()

    base = [torch.randn(8, 64, generator=torch.Generator().manual_seed(1))]
    fresh = freshen(base, RECORD.seed)
    path = tmp_path / "kept.kbt"
    save_tensors(path, [total(base[0]) + 1.0], single=True)
    verdict = CaseVerdict(passed=False, messages=["wrong"])
    against_earlier_answers(judge_stand_in(), CASE, total, base, [(1, 11)],
                            Expected(inputs=fresh, expected=total(fresh[0])), path, verdict)
    assert verdict.earlier_answer is None and not verdict.matches_earlier_answer
    assert fresh_verdict_findings(CASE, RECORD, verdict)[0].severity == "warning"
