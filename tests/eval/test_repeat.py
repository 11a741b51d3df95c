"""Repeat cases (docs/grading.md, "Repeats"): each shape's first base case called again after every other case,
its output compared with the first call's bit for bit by the trusted judge. A difference is reported with the
elements, the largest difference and where; it fails the check only where the problem asks for determinism."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelbench.eval import verdict
from kernelbench.eval.cases import build_cases
from kernelbench.eval.protocol import CaseRecord, CaseVerdict
from kernelbench.eval.worker.judge import bitwise_difference
from kernelbench.problems.loader import load_problem_spec

REPO = Path(__file__).resolve().parents[2]
UNSTEADY = Path(__file__).resolve().parent / "solutions" / "w4a16_unsteady.py"


def test_each_shape_repeats_its_first_base_case_after_every_other_case():
    spec = load_problem_spec(REPO / "problems" / "07_w4a16_gemm")
    cases = build_cases(spec, spec.smoke_shapes, secret=7, mode="smoke")
    repeats = [c for c in cases if c.repeat_of]
    assert [c.id for c in repeats] == [f"s{i}_repeat" for i in range(len(spec.smoke_shapes))]
    assert cases[-len(repeats):] == repeats  # after every other case
    by_id = {c.id: c for c in cases}
    for repeat in repeats:
        first = by_id[repeat.repeat_of]
        assert first.label == "base" and first.shape_index == repeat.shape_index
        assert (repeat.seed, repeat.case, repeat.scale, repeat.shape) == (first.seed, first.case, first.scale, first.shape)
        assert not repeat.audit and not repeat.exact_repeat  # 07 does not ask for determinism
    deterministic = spec.model_copy(update={"deterministic": True})
    assert all(c.exact_repeat for c in build_cases(deterministic, spec.smoke_shapes, 7, "smoke") if c.repeat_of)


def test_bitwise_difference_counts_elements_and_names_the_largest():
    first = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    assert bitwise_difference("s0", 0, first, first.clone()) is None
    again = first.clone()
    again[1, 2] += 0.5
    again[2, 3] += 2.0
    d = bitwise_difference("s0", 0, first, again)
    assert d is not None and (d.differing, d.total, d.worst_index, d.max_abs_diff) == (2, 12, [2, 3], 2.0)


def test_bits_not_values_are_compared():
    nan = torch.tensor([float("nan"), 1.0])
    assert bitwise_difference("s0", 0, nan, nan.clone()) is None  # the same NaN bits: the same output
    zero = bitwise_difference("s0", 0, torch.tensor([0.0]), torch.tensor([-0.0]))
    assert zero is not None and zero.differing == 1 and zero.max_abs_diff == 0.0
    ints = bitwise_difference("s0", 1, torch.tensor([[3, 1]]), torch.tensor([[1, 3]]))
    assert ints is not None and ints.differing == 2 and ints.output == 1


def _judged_repeat(exact: bool):
    spec = load_problem_spec(REPO / "problems" / "07_w4a16_gemm")
    case = next(c for c in build_cases(spec, spec.smoke_shapes, 7, "smoke") if c.repeat_of)
    case = case.model_copy(update={"exact_repeat": exact})
    difference = bitwise_difference(case.repeat_of, 0, torch.zeros(4), torch.tensor([0.0, 0.0, 1e-3, 0.0]))
    judged = CaseVerdict(passed=True, repeat=[difference])
    return verdict.judge_case(case, CaseRecord(), judged)


def test_a_difference_is_a_warning_where_the_problem_allows_it_and_a_failed_check_where_it_does_not():
    result, found = _judged_repeat(exact=False)
    assert result.passed and [f.severity for f in found] == ["warning"]
    assert found[0].check == "repeat_bitwise" and "1 of 4 elements" in found[0].message
    result, found = _judged_repeat(exact=True)
    assert not result.passed and "not deterministic" in result.message and "index [2]" in result.message
    assert [f.check for f in found] == ["repeat_bitwise"]


def test_a_solution_that_changes_from_call_to_call_passes_with_the_evidence():
    """Right within the tolerance on every call, a different element moved each time: PASS (float atomics do
    this honestly), and the report names the two calls, the elements and the largest difference."""
    from kernelbench.eval.grade import grade_solution

    report = grade_solution(UNSTEADY, REPO / "problems" / "07_w4a16_gemm", device="cpu", shapes="smoke",
                            timing=False)
    assert report.grading.outcome.value == "pass", report.grading.reasons
    repeats = [f for f in report.integrity if f.check == "repeat_bitwise"]
    assert len(repeats) == 2 and all(f.severity == "warning" for f in repeats)
    assert "s0_base_42" in repeats[0].message and "2 of 144 elements" in repeats[0].message
    assert [c.passed for c in report.grading.checks if c.case.startswith("repeat:")] == [True, True]
    from kernelbench.eval.environment import grader_hash  # which grader graded it, recorded with the result

    assert report.environment.grader_hash == grader_hash() and len(grader_hash()) == 64


def test_the_grader_hash_changes_with_the_grading_code(tmp_path, monkeypatch):
    import shutil

    import kernelbench
    from kernelbench.eval import environment

    copy = tmp_path / "kernelbench"
    shutil.copytree(Path(kernelbench.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(kernelbench, "__file__", str(copy / "__init__.py"))
    environment.grader_hash.cache_clear()
    try:
        before = environment.grader_hash()
        environment.grader_hash.cache_clear()
        with (copy / "eval" / "verdict.py").open("a") as f:
            f.write("# one more line\n")
        assert environment.grader_hash() != before
    finally:
        environment.grader_hash.cache_clear()


def test_outputs_are_compared_only_where_the_reference_drew_the_same_inputs(tmp_path):
    """A repeat whose inputs did not replay (a problem whose draw ignores its seed) shows no difference: none
    that a kernel made could be told from the new inputs."""
    from types import SimpleNamespace

    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.judge import against_first_call, inputs_digest

    spec = load_problem_spec(REPO / "problems" / "07_w4a16_gemm")
    cases = build_cases(spec, spec.smoke_shapes, 7, "smoke")
    repeat = next(c for c in cases if c.repeat_of)
    first = next(c for c in cases if c.id == repeat.repeat_of)

    def judged(tmp: Path, inputs_again: list) -> list:
        judge = SimpleNamespace(repeated={first.id}, first_outputs={}, first_inputs={})
        for case, out, inputs in ((first, torch.zeros(3), [torch.ones(5), 2]), (repeat, torch.ones(3), inputs_again)):
            path = tmp / f"out_{case.id}.kbt"
            save_tensors(path, [out], single=True)
            found = against_first_call(judge, case, path, inputs)
        return found

    assert [d.differing for d in judged(tmp_path, [torch.ones(5), 2])] == [3]
    assert judged(tmp_path, [torch.full((5,), 2.0), 2]) == []
    assert judged(tmp_path, [torch.ones(5), 3]) == []
    assert inputs_digest([torch.arange(10**6)]) != inputs_digest([torch.arange(10**6) + 1])
