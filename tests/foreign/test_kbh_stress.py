"""KernelBench-Hard's own stress cases as our grader's correctness cases (kernelbench.problems.layouts.kbh_stress):
declared from their harness beside the deck, applied to our seeded draws, judged within their tolerance for the
case, and a solution wrong only on one of them FAILs naming it. First on a toy deck with a small stand-in harness
written here (their function names, trivial transforms), then on the fetched kernelbench.com deck where it is
present (it is never committed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelbench.eval.cases import build_cases
from kernelbench.problems.layouts import layout_of
from kernelbench.problems.layouts.kbh_stress import HARNESS_COPY
from kernelbench.problems.loader import load_problem_spec, load_reference
from kernelbench.problems.problem import open_problem

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TOY_GEMM = HERE / "decks" / "kbh-toy" / "01_toy_scaled_gemm"
SOLUTIONS = HERE / "solutions"
FOREIGN = REPO / ".foreign" / "kernelbench.com" / "benchmarks" / "hard"
PAGED = FOREIGN / "problems-h100" / "03_paged_attention"

CORRECTNESS = '''
import torch

DEFAULT = {"atol": 1e-4, "rtol": 1e-4}


def tolerance_for_dtype(dtype, override=None):
    value = (override or {}).get(str(dtype).split(".")[-1])
    if isinstance(value, (int, float)):
        return {"atol": float(value), "rtol": float(value)}
    if isinstance(value, dict):
        return {"atol": float(value["atol"]), "rtol": float(value["rtol"])}
    return DEFAULT
'''

NUMERIC = '''
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NumericStressCase:
    name: str
    input_scales: dict = field(default_factory=dict)
    state_scales: dict = field(default_factory=dict)
    tolerance: dict | None = None


CASES = (
    NumericStressCase("nominal"),
    NumericStressCase("huge", input_scales={0: 1000.0}, tolerance={"float32": {"atol": 0.5, "rtol": 1e-3}}),
    NumericStressCase("small_weight", state_scales={"weight": 0.01}),
)


def numeric_stress_cases(problem_name):
    return CASES if problem_name == "01_toy_scaled_gemm" else CASES[:1]


def tolerance_for_case(base, case):
    return base if case.tolerance is None else {**(base or {}), **case.tolerance}


@contextmanager
def numeric_stress_context(ref_model, sol_model, inputs, case):
    assert not case.state_scales
    yield [x * case.input_scales.get(i, 1.0) for i, x in enumerate(inputs)]
'''

PROPERTY = '''
import random
from dataclasses import dataclass

from src.eval.correctness import tolerance_for_dtype  # their modules import each other as src.eval.*


@dataclass(frozen=True)
class ConstantRowCase:
    row: int
    value: int


def property_shape_index(problem_name):
    return 1 if problem_name == "01_toy_scaled_gemm" else None


def tolerance_for_property(problem_name, base):
    return {**(base or {}), "float32": {"atol": 0.01, "rtol": 0.01}}


def canonical_property_case(problem_name):
    return ConstantRowCase(row=0, value=3)


def generate_property_cases(problem_name, *, seed=None, max_examples=None):
    print(f"PROPERTY_SEED: {seed}", flush=True)
    rng = random.Random(seed)
    drawn = [ConstantRowCase(row=rng.randrange(1, 5), value=rng.randrange(4, 9)) for _ in range(2)]
    return seed, (canonical_property_case(problem_name), *drawn)


def apply_property_case(problem_name, inputs, case):
    x = inputs[0].clone()
    x[case.row % x.shape[0]] = float(case.value)
    return [x]
'''


def write_toy_deck(root: Path) -> Path:
    """The toy GEMM in a deck with a stand-in of their harness two folders above it (their check.py's layout)."""
    problem = root / "problems-toy" / TOY_GEMM.name
    shutil.copytree(TOY_GEMM, problem)
    yaml = problem / "problem.yaml"
    yaml.write_text(yaml.read_text().replace("  torch.float32: 1.0e-3\n", "  float32: 1.0e-3\n"))
    package = root / "src"
    (package / "eval").mkdir(parents=True)
    (package / "__init__.py").write_text('"""A stand-in of their package."""\n')
    (package / "eval" / "__init__.py").write_text("")
    for name, text in (("correctness", CORRECTNESS), ("numeric_stress", NUMERIC), ("property_stress", PROPERTY)):
        (package / "eval" / f"{name}.py").write_text(textwrap.dedent(text))
    return problem


@pytest.fixture
def toy(tmp_path) -> Path:
    return write_toy_deck(tmp_path / "bench")


def by_label(spec) -> dict:
    return {s.case_label: s for s in spec.stress}


# ------------------------------------------------------------------------------------------------- declared

def test_their_cases_are_declared_with_their_tolerance_and_shape(toy):
    stress = by_label(load_problem_spec(toy))
    assert set(stress) == {"stress:huge", "property:ConstantRowCase(row=0, value=3)"}
    huge, canonical = stress["stress:huge"], stress["property:ConstantRowCase(row=0, value=3)"]
    assert huge.distribution == "numeric:huge" and huge.shapes is None
    assert huge.tolerance["float32"].atol == 0.5 and huge.tolerance["float32"].rtol == 1e-3
    assert canonical.shapes == [1] and canonical.tolerance["float32"].atol == 0.01
    assert "src" not in sys.modules  # their package never stays behind under its generic name


def test_a_case_that_scales_the_models_state_is_named_as_lost(toy):
    row = {r.concept: r for r in layout_of(toy).mapping(toy)}["stress cases"]
    assert "small_weight" in row.lost and "weight" in row.lost
    assert "stress:huge (within float32 0.5/0.001)" in row.ours
    assert "property:ConstantRowCase(row=0, value=3) on shape 1" in row.ours


def test_without_their_harness_nothing_is_drawn_and_the_mapping_says_so():
    assert load_problem_spec(TOY_GEMM).stress == []
    row = {r.concept: r for r in layout_of(TOY_GEMM).mapping(TOY_GEMM)}["stress cases"]
    assert row.ours.startswith("none drawn") and "property cases" in row.lost


def test_each_grading_draws_its_property_cases_from_the_secret(toy, capsys):
    problem = open_problem(toy)
    spec = problem.spec
    one, again, other = (problem.graded_spec(secret) for secret in (11, 11, 12))
    drawn = [s.case_label for s in one.stress[len(spec.stress):]]
    assert drawn and all(label.startswith("property:ConstantRowCase(") for label in drawn)
    assert one == again and one.stress != other.stress
    assert all(s.shapes == [1] and s.tolerance for s in one.stress[len(spec.stress):])
    assert "PROPERTY_SEED" not in capsys.readouterr().out  # a grading's --json answer stays JSON


def test_cases_are_built_on_their_shapes_and_carry_their_tolerance(toy):
    spec = open_problem(toy).graded_spec(5)
    cases = build_cases(spec, spec.shapes, 5, "full")
    properties = [c for c in cases if c.case.startswith("property:")]
    assert len(properties) == 3 and {c.shape_index for c in properties} == {1}
    assert all(c.label == c.case and c.tolerance["float32"].atol == 0.01 for c in properties)
    huge = [c for c in cases if c.label == "stress:huge"]
    assert len(huge) == 1 and huge[0].tolerance["float32"].atol == 0.5
    # our own property draws mix only entries without a tolerance or shapes of their own
    assert {c.case for c in cases if c.label.startswith("property:base")} <= {"base"}


def test_the_shim_applies_their_transform_to_our_seeded_draw(toy):
    reference = load_reference(toy)
    shape = {"M": 5, "N": 12, "K": 20}
    (base,) = reference.get_inputs(shape, 3, "cpu")
    (huge,) = reference.get_inputs(shape, 3, "cpu", case="numeric:huge")
    (row,) = reference.get_inputs(shape, 3, "cpu", case="property:ConstantRowCase(row=2, value=7)")
    assert (huge == base * 1000.0).all()
    assert (row[2] == 7.0).all() and (row[:2] == base[:2]).all() and (row[3:] == base[3:]).all()
    with pytest.raises(ValueError, match="cannot be read"):
        reference.get_inputs(shape, 3, "cpu", case="property:__import__('os')")
    with pytest.raises(ValueError, match="no case 'tiny'"):
        reference.get_inputs(shape, 3, "cpu", case="numeric:tiny")


def test_the_graders_copy_holds_their_harness_and_hashes_alike(toy, tmp_path):
    problem = open_problem(toy)
    copy = problem.pristine_copy(tmp_path / "copy")
    assert (copy / HARNESS_COPY / "src" / "eval" / "property_stress.py").is_file()
    assert all(p.is_file() for p in problem.pristine_paths(copy))
    assert open_problem(copy).content_hash == problem.content_hash
    (toy.parent.parent / "src" / "eval" / "numeric_stress.py").write_text(NUMERIC.replace("1000.0", "10.0"))
    # their harness decides verdicts: it is graded content
    assert open_problem(copy).content_hash != open_problem(toy).content_hash
    (row,) = load_reference(copy).get_inputs({"M": 5, "N": 12, "K": 20}, 3, "cpu",
                                             case="property:ConstantRowCase(row=1, value=4)")
    assert (row[1] == 4.0).all()


def test_a_case_is_judged_within_its_own_tolerance():
    import torch

    from kernelbench.eval.cases import Case
    from kernelbench.eval.worker.comparison import Comparer
    from kernelbench.problems.spec import Tolerance

    comparer = Comparer(torch, object(), "cpu", None, {"float32": {"atol": 1e-3, "rtol": 1e-3, "row_rtol": 0.0}})
    expected = torch.ones(4, 4)
    close = expected + 0.1
    plain = Case(id="a", shape_index=0, shape={}, public_seed=1, seed=1)
    loose = plain.model_copy(update={"tolerance": {"float32": Tolerance(atol=0.5, rtol=0.0)}})
    assert not comparer.judge("a", close, expected, None, None, [], comparer.tolerance_of(plain))[0].ok
    assert comparer.judge("a", close, expected, None, None, [], comparer.tolerance_of(loose))[0].ok


# ------------------------------------------------------------------------------------------------- graded

def grade_json(solution: Path, problem: Path, shapes: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", str(problem),
                           "--device", "cpu", "--shapes", shapes, "--json"],
                          check=False, capture_output=True, text=True, timeout=600)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def first_failure(report: dict) -> str:
    return next(c["case"] for c in report["grading"]["checks"] if not c["passed"])


@pytest.mark.slow
def test_a_solution_wrong_only_on_their_stress_cases_fails_naming_the_case(toy, tmp_path):
    honest = SOLUTIONS / "kbh_gemm_honest.py"
    code, report = grade_json(honest, toy, "full")
    assert code == 0 and report["grading"]["outcome"] == "pass", report["grading"]["reasons"]
    labels = {c["case"] for c in report["grading"]["checks"]}
    assert "stress:huge" in labels and "property:ConstantRowCase(row=0, value=3)" in labels

    text = honest.read_text()
    clamped = tmp_path / "clamped" / "solution.py"  # right on N(0, 1) inputs, wrong once they are scaled up
    clamped.parent.mkdir()
    clamped.write_text(text.replace("return (x[:, None, :]", "x = x.clamp(-50, 50)\n        return (x[:, None, :]"))
    code, report = grade_json(clamped, toy, "full")
    assert code == 1 and report["grading"]["outcome"] == "check_failed"
    assert first_failure(report) == "stress:huge" and "stress:huge" in report["grading"]["reasons"][0]

    constant = tmp_path / "constant" / "solution.py"  # wrong only on a row of equal values (their property case)
    constant.parent.mkdir()
    constant.write_text(text.replace(
        "        return (x[:, None, :] * self.weight[None]).sum(-1) * self.scale",
        "        out = (x[:, None, :] * self.weight[None]).sum(-1) * self.scale\n"
        "        flat = (x == x[:, :1]).all(-1)\n"
        "        return torch.where(flat[:, None], torch.zeros_like(out), out)"))
    code, report = grade_json(constant, toy, "full")
    assert code == 1 and report["grading"]["outcome"] == "check_failed"
    assert first_failure(report).startswith("property:ConstantRowCase(")
    assert "property:ConstantRowCase(" in report["grading"]["reasons"][0]


# ------------------------------------------------------------------------------------------------- their deck

def need_their_deck() -> None:
    if not (PAGED.is_dir() and (FOREIGN / "src" / "eval" / "property_stress.py").is_file()):
        pytest.skip(f"the kernelbench.com deck and its harness are not fetched into {FOREIGN} (never committed)")
    pytest.importorskip("hypothesis", reason="their property_stress imports hypothesis")


def test_their_deck_declares_its_numeric_and_property_cases():
    need_their_deck()
    stress = by_label(load_problem_spec(PAGED))
    canonical = "property:PagedShortSequenceCase(divisor=16, tail=1, stride=3)"
    assert set(stress) == {"stress:small_q_kv", "stress:large_q_kv", canonical}
    small = stress["stress:small_q_kv"].tolerance["bfloat16"]
    assert (small.atol, small.rtol) == (5e-4, 5e-2)  # their tolerance_for_case over problem.yaml's 0.02
    assert stress[canonical].shapes == [0]
    sonic = by_label(load_problem_spec(PAGED.parent / "06_sonic_moe_swiglu"))
    prop = next(s for label, s in sonic.items() if label.startswith("property:"))
    assert prop.shapes == [1] and (prop.tolerance["bfloat16"].atol, prop.tolerance["bfloat16"].rtol) == (0.1, 0.05)
    gemm = PAGED.parent / "01_fp8_gemm"
    assert "small_weight" in {r.concept: r for r in layout_of(gemm).mapping(gemm)}["stress cases"].lost


def test_their_property_case_is_their_apply_property_case_on_our_draw():
    need_their_deck()
    from kernelbench.problems.layouts.kbh_stress import harness_root, load_harness

    reference = load_reference(PAGED)
    shape = load_problem_spec(PAGED).shapes[0]
    case = "PagedShortSequenceCase(divisor=16, tail=1, stride=3)"
    base = reference.get_inputs(shape, 9, "cpu")
    ours = reference.get_inputs(shape, 9, "cpu", case=f"property:{case}")
    module = load_harness(harness_root(PAGED)).property
    theirs = module.apply_property_case("03_paged_attention", base, module.canonical_property_case("03_paged_attention"))
    assert all((a == b).all() for a, b in zip(ours, theirs, strict=True))
    assert int(ours[3].max()) < shape["seq_len"]  # short sequences: what a full-length kernel gets wrong


@pytest.mark.slow
def test_a_paged_attention_kernel_ignoring_seq_lens_fails_their_property_case_on_the_cpu():
    need_their_deck()
    code, report = grade_json(SOLUTIONS / "kbh_paged_attention_full_length.py", PAGED, "smoke")
    assert code == 1 and report["grading"]["outcome"] == "check_failed"
    failed = {c["case"] for c in report["grading"]["checks"] if not c["passed"]}
    assert "property:PagedShortSequenceCase(divisor=16, tail=1, stride=3)" in failed
    assert all(label.startswith("property:PagedShortSequenceCase(") for label in failed)
    assert "property:PagedShortSequenceCase(divisor=16, tail=1, stride=3)" in report["grading"]["reasons"][0]

    code, report = grade_json(SOLUTIONS / "kbh_paged_attention_honest.py", PAGED, "smoke")
    assert code == 0 and report["grading"]["outcome"] == "pass", report["grading"]["reasons"]
