"""Timed outputs judged like checked ones, with stress inputs mixed into the timed rotation.

The rotation (portable.timing.Rotation) and its timing rules; the stress cases drawn for every timed shape
(cases.timed_stress_cases); and the bench stage's judge (worker.bench_shape / TimedJudge) on the Kahan softmax
problem: a candidate that drops to an uncompensated float32 sum once it has been called a few times is caught on
the absorb rows while timed, an honest one passes, and the judging itself is not recorded by the timed launch audit.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelbench.eval.cases import Case, build_cases, timed_stress_cases, timed_stress_entries
from kernelbench.eval.portable.timing import Rotation, TimedOutputInvalid, time_function
from kernelbench.problems.loader import load_module
from kernelbench.problems.loader import load_problem_spec
from kernelbench.problems.problem import open_problem
from tests.eval.conftest import bench_context

KAHAN = Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"


# ------------------------------------------------------------------------------------------------- rotation

def _calls(rotation: Rotation, n: int) -> list[int]:
    return [rotation.next() for _ in range(n)]


def test_without_stress_sets_the_base_sets_rotate_in_order():
    assert _calls(Rotation(3), 7) == [0, 1, 2, 0, 1, 2, 0]
    assert Rotation(3).stress_left() == []


def test_every_block_holds_every_set_once_in_a_seeded_order():
    orders = set()
    for seed in range(20):
        calls = _calls(Rotation(3, 2, seed), 15)
        blocks = [calls[i:i + 5] for i in range(0, 15, 5)]
        assert all(sorted(b) == [0, 1, 2, 3, 4] for b in blocks)
        assert calls == _calls(Rotation(3, 2, seed), 15)  # the same seed, the same order
        orders.add(tuple(calls))
    assert len(orders) > 10  # the positions of the stress sets move with the seed


def test_stress_left_gives_the_current_blocks_unused_stress_sets():
    rotation = Rotation(2, 2, 5)
    first = rotation.next()
    left = rotation.stress_left()
    assert sorted(left + ([first] if first >= 2 else [])) == [2, 3]
    assert all(rotation.next() < 2 for _ in range(2 - int(first < 2)))


# ------------------------------------------------------------------------------------------------- timing

def _marked_sets(n: int, mark: float) -> list[list[torch.Tensor]]:
    return [[torch.full((8,), mark + k)] for k in range(n)]


def test_stress_calls_are_validated_but_left_out_of_the_samples():
    """Stress inputs that cost far more (a sleep) do not move the median; each is validated at least once."""
    base, stress = _marked_sets(3, 0.0), _marked_sets(2, 100.0)
    seen: list[int] = []

    def fn(x):
        if float(x[0]) >= 100:
            time.sleep(0.02)
        return x * 2

    def validate(out, k):
        seen.append(k)
        return [] if torch.equal(out, (base + stress)[k][0] * 2) else ["wrong"]

    timing = time_function(fn, base, torch.device("cpu"), warmup=2, trials=9, validate=validate,
                           stress_sets=stress, rotation_seed=7)
    assert len(timing.samples_ms) == 9 and max(timing.samples_ms) < 15
    assert {3, 4} <= set(seen) and seen.count(3) >= 2  # several blocks: each stress set met more than once


@pytest.mark.parametrize("switch_after", [1, 2, 4, 8])
def test_a_candidate_switching_once_timed_meets_a_stress_set_after_its_switch(switch_after):
    """Wrong on stress inputs only, and only after its n-th call: caught whatever the seed (the current block's
    stress sets are run before the rotation ends)."""
    base, stress = _marked_sets(3, 0.0), _marked_sets(1, 100.0)
    for seed in range(25):
        def fn(x, calls={"n": 0}):  # noqa: B006  (a fresh counter per seed: a new function each time)
            calls["n"] += 1
            wrong = calls["n"] > switch_after and float(x[0]) >= 100
            return x * 3 if wrong else x * 2

        with pytest.raises(TimedOutputInvalid):
            time_function(fn, base, torch.device("cpu"), warmup=1, trials=8, stress_sets=stress, rotation_seed=seed,
                          validate=lambda out, k: [] if torch.equal(out, (base + stress)[k][0] * 2) else ["wrong"])


# ------------------------------------------------------------------------------------------------- cases

def test_every_timed_shape_gets_stress_draws_of_each_own_distribution():
    spec = load_problem_spec(KAHAN)
    shapes = spec.smoke_shapes
    cases = build_cases(spec, shapes, secret=3, mode="smoke")
    timed = timed_stress_cases(spec, shapes, 3, cases, "smoke")
    entries = timed_stress_entries(spec)
    assert [spec.stress[k].distribution for k in entries] == ["absorb", "peaked"]
    for i in range(len(shapes)):
        mine = [c for c in timed if c.shape_index == i]
        assert sorted({c.label for c in mine}) == ["stress:absorb", "stress:peaked"] and len(mine) == 8
    assert len({c.id for c in timed}) == len(timed)
    reused = [c for c in timed if c in cases]
    assert reused and all(c.id.startswith(f"s{c.shape_index}_stress") for c in reused)  # the problem's own first
    fresh = [c for c in timed if c not in cases]
    assert all(not c.audit and c.case in ("absorb", "peaked") for c in fresh)
    other = timed_stress_cases(spec, shapes, 4, build_cases(spec, shapes, secret=4, mode="smoke"), "smoke")
    assert {c.seed for c in fresh}.isdisjoint({c.seed for c in other})  # drawn with the secret seed
    assert len(timed_stress_cases(spec, shapes, 3, cases, "full")) == 2 * len(entries)


# ------------------------------------------------------------------------------------------------- bench stage

REF = load_module(KAHAN / "reference.py", "reference_for_timed_judging")


class Honest(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
        return (e / e.sum(dim=-1, keepdim=True)).float()


class Switching(Honest):
    """float64 on its first call, float32 running sums on every later one (a stage switch by count;
    within the elementwise tolerance, outside the row-sum bound on absorb rows)."""

    calls = 0

    def forward(self, x):
        Switching.calls += 1
        if Switching.calls == 1:
            return super().forward(x)
        return _float32_running_sum_softmax(x)


def _float32_running_sum_softmax(x):
    """64 strided float32 running sums: within the row-sum bound on base rows (about 2e-7 at vocab 4096), outside
    it on every absorb row set (a maximum absorbs its lane's tiny terms)."""
    from kernelbench.eval.integrity.numerics import lane_sums

    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / lane_sums(e, 64, False).float()[:, None]


def _bench_ctx(tmp_path: Path, model_cls: type, judge_timed: bool = True):
    from kernelbench.eval.integrity.hooks import load_guards
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.judge import publish_inputs

    shape = {"rows": 4, "vocab": 4096}
    cases = [Case(id=f"b{k}", shape_index=0, shape=shape, public_seed=k, seed=k) for k in range(3)]
    cases += [Case(id=f"t{k}", shape_index=0, shape=shape, public_seed=k, seed=100 + k, case="absorb",
                   label="stress:absorb") for k in range(2)]
    (tmp_path / "inputs").mkdir(), (tmp_path / "check").mkdir(), (tmp_path / "bench").mkdir()
    ctx = bench_context(tmp_path, KAHAN, rotation_seed=11, trials=6, candidate=SimpleNamespace(Model=model_cls),
                        judge_timed=judge_timed, cases=cases,
                        kahan_bound=load_guards().kahan_bound(load_problem_spec(KAHAN), open_problem(KAHAN)))
    ctx = ctx.with_line("candidate", SimpleNamespace(Model=model_cls))
    ctx = type(ctx)(**{**ctx.__dict__, "reference": REF})
    model = REF.Model(**REF.get_init_kwargs(shape))
    for case in cases:
        inputs = REF.get_inputs(shape, case.seed, "cpu", case=case.case)
        publish_inputs(ctx.job.input_path(case.id), inputs)
        save_tensors(tmp_path / "check" / f"out_{case.id}.kbt", [model(*inputs)], single=True)
    return ctx, cases


def test_a_candidate_switching_to_a_plain_float32_sum_once_timed_is_caught_on_the_absorb_rows(tmp_path):
    from kernelbench.eval.worker.bench import bench_shape

    Switching.calls = 0
    ctx, cases = _bench_ctx(tmp_path, Switching)
    result = bench_shape(ctx, 0, cases)
    assert "TimedOutputInvalid" in result.error and "[stress:absorb]" in result.error
    assert "normalisation" in result.error  # the problem's compare() hook, as in the check stage
    assert result.integrity and result.integrity[0].check == "kahan_row_sum"
    assert "(timed call)" in result.integrity[0].evidence


def test_an_honest_candidate_passes_with_stress_sets_met_and_the_judging_unrecorded(tmp_path):
    from kernelbench.eval.worker.bench import bench_shape

    ctx, cases = _bench_ctx(tmp_path, Honest)
    result = bench_shape(ctx, 0, cases)
    assert result.error is None, result.error
    assert len(result.samples_ms) == 6 and result.stress_sets == 2 and result.memo_probe == "ok"
    # the compare() hook (reference.py code) ran between the timed calls, outside the timed launch audit
    assert not [n for n in result.launches if n.startswith("python::")], result.launches


def test_baseline_lines_keep_the_plain_tolerance(tmp_path):
    """Without judge_timed (the eager / compiled / SOTA lines timed for baselines) the hook is not applied."""
    from kernelbench.eval.worker.bench import bench_shape

    class Library(Honest):
        def forward(self, x):  # a plain float32 sum, as the SOTA line's library softmax
            return _float32_running_sum_softmax(x)

    ctx, cases = _bench_ctx(tmp_path, Library, judge_timed=False)
    base_only = [c for c in cases if c.label == "base"]
    assert bench_shape(ctx, 0, base_only).error is None


def test_what_runs_unrecorded_stays_out_of_the_launch_record():
    from kernelbench.eval.integrity.profiling import record_launches, unrecorded

    x = torch.randn(4, 64)
    with record_launches("cpu", [KAHAN / "reference.py"]) as launches:
        torch.exp(x)
        with unrecorded():
            torch.softmax(x, -1)
            REF.compare(x.softmax(-1), x.softmax(-1), [x], {})
        torch.exp(x)
    assert "aten::exp" in launches
    assert not [n for n in launches if "softmax" in n or n.startswith("python::")], sorted(launches)
    with unrecorded():  # outside any recording: nothing to pause
        torch.exp(x)


def test_a_timed_output_far_from_its_checked_one_is_a_precision_drop(tmp_path):
    """The error-size detector on a timed call: the judge measured the checked output's error; a timed output whose
    distance from it exceeds the detector's limits by more than that error is reported, an equal one is not."""
    from kernelbench.eval.protocol import ErrorSize
    from kernelbench.eval.worker.timed_judge import TimedJudge

    ctx, cases = _bench_ctx(tmp_path, Honest)
    eps = torch.finfo(torch.float32).eps
    sizes = {"b0": [ErrorSize(output=0, candidate=3e-8, reference=3e-8, eps=eps)]}
    ctx = type(ctx)(**{**ctx.__dict__, "job": ctx.job.model_copy(update={"error_sizes": sizes})})
    judge = TimedJudge(ctx, cases, [[None]] * len(cases))
    checked = judge.expected[0]
    assert judge.precision(checked.clone(), 0) == []
    coarse = checked.to(torch.bfloat16).float()  # bfloat16 rounding: ~1e-3 relative
    found = judge.precision(coarse, 0)
    assert found and found[0].check == "error_size" and found[0].klass == 14
    assert "(timed call" in found[0].evidence
    assert judge.precision(coarse, 1) == []  # no oracle case: nothing measured to compare with
