"""Held-out cases (docs/grading.md, "Held-out cases"): never in the agent's workspace, judged after the run in a
stage pair of their own, reported apart from the published verdict, and each failure replayable from its seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelbench.errors import KernelBenchError
from kernelbench.eval.grading import GradingPlan
from kernelbench.harness.workspace import prepare_workspace
from kernelbench.problems.heldout import HELDOUT_FILES
from kernelbench.problems.loader import load_heldout, load_problem_spec, load_reference
from kernelbench.problems.problem import open_problem

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
DECK = sorted(p for p in PROBLEMS.glob("[0-9][0-9]_*") if (p / "heldout.yaml").is_file())
PLANTED = Path(__file__).resolve().parent / "solutions" / "topk_vector_width.py"


def json_values(value):
    """Every dict and list inside parsed JSON, the value itself included."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        yield from json_values(child)


def flow_yaml(shape: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in shape.items()) + "}"


def test_the_whole_deck_declares_held_out_cases():
    assert len(DECK) == 9


@pytest.mark.parametrize("problem", DECK, ids=lambda p: p.name)
def test_no_held_out_declaration_reaches_the_agents_workspace(problem, tmp_path):
    """The files, their shapes (as JSON the workspace's scripts read, or as the YAML text declares them) and their
    property functions: none of them is anywhere in what the agent gets, in either shapes mode."""
    heldout = load_heldout(problem)
    held_shapes = heldout.shapes + heldout.smoke_shapes
    declared = [flow_yaml(s) for s in held_shapes] + [f"def {p.name}(" for p in heldout.properties]
    for mode in ("full", "smoke"):
        root = tmp_path / mode / "ws"
        prepare_workspace(open_problem(problem), root, tmp_path / mode / "pristine", device="cpu", shapes=mode)
        files = [p for p in root.rglob("*") if p.is_file()]
        assert files and not [p for p in files if p.name in HELDOUT_FILES]
        for path in files:
            text = path.read_text(errors="replace")
            assert not [d for d in declared if d in text], path
            if path.suffix == ".json":
                assert not [v for v in json_values(json.loads(text)) if isinstance(v, dict) and v in held_shapes]


def test_a_published_shape_declared_as_held_out_is_refused_naming_the_file(tmp_path):
    problem = tmp_path / "05_topk_bitonic"
    shutil.copytree(PROBLEMS / "05_topk_bitonic", problem)
    text = (problem / "heldout.yaml").read_text().replace("{batch: 2, n: 301, k: 8}", "{batch: 4, n: 300, k: 8}")
    (problem / "heldout.yaml").write_text(text)
    with pytest.raises(KernelBenchError, match="is a published shape") as caught:
        load_heldout(problem)
    assert "heldout.yaml" in str(caught.value)


def test_declarations_that_do_not_load_leave_the_published_grading_alone(tmp_path):
    problem = tmp_path / "05_topk_bitonic"
    shutil.copytree(PROBLEMS / "05_topk_bitonic", problem)
    (problem / "heldout.yaml").write_text("shapes: [{batch: 2}]\nsmoke_shapes: [{batch: 2}]\n")
    plan = SimpleNamespace(pristine=problem, problem=open_problem(problem), spec=load_problem_spec(problem),
                           options=SimpleNamespace(shapes="smoke"),
                           secret=1, shapes=[{}], heldout=[], heldout_shapes=[], heldout_note="", heldout_hash="")
    GradingPlan.plan_heldout(plan)
    assert plan.heldout == [] and "could not be loaded" in plan.heldout_note and "keys" in plan.heldout_note


def test_a_shape_specialised_kernel_passes_the_published_shapes_and_fails_the_held_out_ones():
    """The planted kernel drops the columns past the last multiple of 4: right on every published shape, wrong
    one column past them. The published verdict is a PASS, untouched; the held-out result says FAIL, and the seed
    it gives redraws the failing inputs."""
    from kernelbench.eval.grade import grade_solution

    problem = PROBLEMS / "05_topk_bitonic"
    report = grade_solution(PLANTED, problem, device="cpu", shapes="smoke", timing=False)
    grading, held = report.grading, report.grading.held_out
    assert grading.outcome.value == "pass" and grading.correct and not grading.reasons, report.check_log
    assert all(c.passed for c in grading.checks) and not any(f.severity == "error" for f in report.integrity)
    assert held is not None and held.correct is False and held.heldout_hash
    failed = [c for c in held.checks if not c.passed]
    assert failed and {c.case for c in failed} >= {"heldout:stress:presorted"}
    assert f"seed {failed[0].seed}" in held.note and "[held-out] FAIL" in report.check_log
    shape = held.shapes[failed[0].shape_index]
    assert f"weights seed {held.weights_seeds[failed[0].shape_index]}" in held.note
    assert shape["n"] % 4 and shape not in load_problem_spec(problem).smoke_shapes
    reference = load_reference(problem)
    (x,) = reference.get_inputs(shape, failed[0].seed, "cpu", "presorted")
    from kernelbench.problems.modules import load_module

    planted = load_module(PLANTED, "planted").Model(shape["k"])
    assert not torch.equal(planted(x)[1], reference.Model(shape["k"])(x)[1])


@pytest.mark.slow
def test_a_kernel_that_hangs_on_a_held_out_shape_keeps_its_published_verdict():
    """The held-out cases run in processes of their own: a candidate whose process never returns from the first
    held-out shape (stopped at the stage's limit, 10 s here) loses nothing it earned on the published ones (same
    outcome, checks and findings), and the held-out result says it was not right there."""
    from kernelbench.eval.grade import grade_solution

    solution = Path(__file__).resolve().parent / "solutions" / "topk_hangs_off_grid.py"
    report = grade_solution(solution, PROBLEMS / "05_topk_bitonic", device="cpu", shapes="smoke", timing=False,
                            limits={"heldout": 10.0})
    grading, held = report.grading, report.grading.held_out
    assert grading.outcome.value == "pass" and grading.correct and all(c.passed for c in grading.checks)
    assert not any(f.severity == "error" for f in report.integrity), report.integrity
    assert held is not None and held.correct is False
    assert all(not c.passed for c in held.checks) and "stage ended before this case ran" in held.checks[0].message


def test_the_command_line_prints_the_held_out_result_apart_with_its_note_escaped():
    from kernelbench.base.models import HeldOut, SeedResult
    from kernelbench.eval.cli import held_out_line

    held = HeldOut(correct=False, note="1 of 2 held-out cases failed: raised \x1b[2Jboom",
                   checks=[SeedResult(shape_index=0, seed=5, case="heldout:shape", passed=True),
                           SeedResult(shape_index=0, seed=6, case="heldout:shape", passed=False)])
    line = held_out_line(held)
    assert "not part of the verdict" in line and "WRONG, 1 of 2 right" in line
    assert "\x1b" not in line and "\\x1b[2Jboom" in line
    assert "not judged, 0 of 0" in held_out_line(HeldOut(note="not judged: the published shapes failed"))


def test_held_out_judging_is_on_unless_the_grader_s_caller_turns_it_off():
    """Every real grading judges the held-out cases: on by default in the grader's options and Python API, the
    `grade` and `run` commands, a run request, a sweep file and its jobs. Only the trusted caller can turn it off,
    by an argument (no environment variable a candidate could set does)."""
    import inspect

    from kernelbench.cli import build_parser
    from kernelbench.eval.grade import grade_solution
    from kernelbench.eval.grading import GradingOptions
    from kernelbench.harness.agentspec import AgentSpec
    from kernelbench.harness.runner import RunRequest
    from kernelbench.harness.sweep import SweepFile

    assert GradingOptions().held_out is True
    assert inspect.signature(grade_solution).parameters["held_out"].default is True
    parser = build_parser()
    assert parser.parse_args(["grade", "s.py", "--problem", "p"]).held_out == "on"
    assert parser.parse_args(["run", "--agent", "scripted:eager", "--problem", "p"]).held_out == "on"
    problem = open_problem(DECK[0])
    assert RunRequest(agent=AgentSpec.parse("scripted:eager"), problem=problem).held_out is True
    assert SweepFile(name="s", agents=["scripted:eager"]).held_out is True


def test_a_run_and_a_sweep_hand_the_held_out_switch_to_their_grading(tmp_path, monkeypatch):
    """What a sweep file says reaches each job's run request, and the run request's switch reaches
    grade_solution."""
    from kernelbench.eval import grade
    from kernelbench.harness import runner
    from kernelbench.harness.sweep import Sweep

    seen = []
    monkeypatch.setattr(grade, "grade_solution", lambda *args, **kwargs: seen.append(kwargs["held_out"]))
    for held_out in (True, False):
        path = tmp_path / f"sweep-{held_out}.yaml"
        path.write_text(f"name: s\nagents: [scripted:eager]\nproblems: [05_topk_bitonic]\nproblems_dir: {PROBLEMS}\n"
                        f"device: cpu\nshapes: smoke\n" + ("" if held_out else "held_out: false\n"))
        [job] = Sweep.load(path).jobs()
        runner._grade(tmp_path / "solution.py", job.request())
    assert seen == [True, False]


def test_turned_off_the_held_out_stage_starts_nothing_and_says_so():
    """--held-out off: no held-out process starts (the plan below has no way to start one), and the result's
    column says why there is no judgement rather than looking like a problem without held-out cases."""
    from kernelbench.base.models import Grading
    from kernelbench.eval.grading import GradingOptions, GradingState
    from kernelbench.eval.stages import heldout

    plan = SimpleNamespace(options=GradingOptions(device="cpu", held_out=False), heldout=["a case"])
    state = GradingState(Grading(device="cpu"))
    heldout.check(plan, state, True)
    held = state.grading.held_out
    assert held is not None and held.correct is None and not held.checks and held.note == heldout.TURNED_OFF
    assert "heldout" not in state.stages
