"""A wrong output on fresh inputs (a base set permuted just before a timed call), judged by the trusted fresh
stage: the answer to the base set's own inputs, which earlier calls saw, is an answer kept across calls
(memoisation, class 7, INVALID: `worker.fresh.against_base_answer`); any other wrong output fails the checks with
a lead (class 8, a warning: `verdict.fresh_verdict_findings`), since a race or a bug on those values gives it too."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from kernelbench.eval.portable.fresh import freshen
from kernelbench.eval.protocol import Case, CaseVerdict, KeptCall
from kernelbench.eval.tensorfile import save_tensors
from kernelbench.eval.verdict import fresh_verdict_findings
from kernelbench.eval.worker.fresh import against_base_answer
from kernelbench.eval.worker.judge import Expected

CASE = Case(id="b0", shape_index=0, shape={"rows": 8, "vocab": 64}, public_seed=0, seed=0)
RECORD = KeptCall(case="b0", seed=7, call=3, of=20, file="kept.kbt")


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), dim=-1).float()


def judge_stand_in() -> SimpleNamespace:
    comparer = SimpleNamespace(tolerance_of=lambda case: {"float32": {"atol": 1e-5, "rtol": 1e-5}}, index_outputs=[])
    return SimpleNamespace(ctx=SimpleNamespace(torch=torch, job=SimpleNamespace(device="cpu")), comparer=comparer)


def judged_kept(tmp_path, output_of) -> CaseVerdict:
    base = [torch.randn(8, 64, generator=torch.Generator().manual_seed(1))]
    fresh = freshen(base, RECORD.seed)
    path = tmp_path / "kept.kbt"
    save_tensors(path, [output_of(base, fresh)], single=True)
    verdict = CaseVerdict(passed=False, messages=["output: 512 of 512 elements out of tolerance"])
    against_base_answer(judge_stand_in(), CASE, softmax, base, Expected(inputs=fresh, expected=softmax(fresh[0])),
                        path, verdict)
    return verdict


def test_the_answer_to_the_unpermuted_base_set_is_a_kept_answer(tmp_path):
    verdict = judged_kept(tmp_path, lambda base, fresh: softmax(base[0]))
    assert verdict.matches_base_answer and "within tolerance" in verdict.base_answer
    [found] = fresh_verdict_findings(CASE, RECORD, verdict)
    assert (found.check, found.klass, found.severity) == ("fresh_inputs", 7, "error")
    assert "within tolerance of the answer to its base set" in found.evidence


def test_another_wrong_output_fails_the_checks_with_a_lead(tmp_path):
    verdict = judged_kept(tmp_path, lambda base, fresh: torch.full_like(fresh[0], 1 / 64))  # uniform rows
    assert not verdict.matches_base_answer and verdict.base_answer.startswith("not the answer")
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
    against_base_answer(judge_stand_in(), CASE, total, base, Expected(inputs=fresh, expected=total(fresh[0])), path,
                        verdict)
    assert verdict.base_answer is None and not verdict.matches_base_answer
    assert fresh_verdict_findings(CASE, RECORD, verdict)[0].severity == "warning"
