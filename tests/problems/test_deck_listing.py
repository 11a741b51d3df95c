"""A deck folder's problems are listed through kernelbench.problems.deck, in whatever layout each is written: what a
sweep, `kernelbench baselines all` and a regrade of a board find there, and the errors for what is not there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.harness.sweep import Sweep
from kernelbench.problems.deck import deck_entries, deck_problems

REPO = Path(__file__).resolve().parents[2]
FOREIGN = REPO / "tests" / "foreign" / "decks"


@pytest.fixture
def mixed_deck(tmp_path: Path) -> Path:
    """Our Kahan problem, a KernelBench-Hard problem, a Stanford file, and entries that are no problem."""
    deck = tmp_path / "deck"
    deck.mkdir()
    shutil.copytree(REPO / "problems" / "04_kahan_softmax", deck / "04_kahan_softmax")
    shutil.copytree(FOREIGN / "kbh-toy" / "02_toy_row_max", deck / "02_toy_row_max")
    shutil.copy(FOREIGN / "stanford-toy" / "1_Toy_Linear_ReLU.py", deck / "1_Toy_Linear_ReLU.py")
    (deck / "README.md").write_text("the deck\n")
    (deck / "notes").mkdir()
    shutil.copytree(REPO / "problems" / "04_kahan_softmax", deck / "_scratch")
    return deck


def test_every_layout_is_listed_by_its_name_and_opens_into_its_problem(mixed_deck: Path):
    entries = deck_entries(mixed_deck)
    assert [(e.name, e.layout.name) for e in entries] == [
        ("02_toy_row_max", "kernelbench-hard"), ("04_kahan_softmax", "native"),
        ("1_Toy_Linear_ReLU", "stanford-kernelbench")]
    problems = deck_problems(mixed_deck)
    assert [p.id for p in problems] == ["02_toy_row_max", "04_kahan_softmax", "1_Toy_Linear_ReLU"]
    assert [p.deck for p in problems][1] == "main"


def test_named_problems_come_in_the_order_named_and_a_missing_name_is_an_error(mixed_deck: Path):
    assert [p.id for p in deck_problems(mixed_deck, ["1_Toy_Linear_ReLU", "04_kahan_softmax"])] == [
        "1_Toy_Linear_ReLU", "04_kahan_softmax"]
    with pytest.raises(KernelBenchError) as caught:
        deck_problems(mixed_deck, ["04_kahan_softmax", "05_missing"])
    diag = caught.value.diagnostic
    assert diag.path == mixed_deck and "05_missing" in diag.message and "04_kahan_softmax" in (diag.hint or "")


def test_a_deck_without_problems_and_a_missing_deck_are_errors_naming_the_folder(tmp_path: Path):
    with pytest.raises(KernelBenchError, match="no problems"):
        deck_problems(tmp_path)
    with pytest.raises(KernelBenchError, match="no such deck folder"):
        deck_entries(tmp_path / "absent")


def test_a_sweep_runs_every_problem_of_the_deck_whatever_its_layout(mixed_deck: Path, tmp_path: Path):
    sweep_path = tmp_path / "sweep.yaml"
    sweep_path.write_text(f"name: mixed\nagents: [scripted:giveup]\nproblems_dir: {mixed_deck}\n"
                          f"runs: {tmp_path / 'runs'}\ndevice: cpu\nshapes: smoke\n")
    jobs = Sweep.load(sweep_path).jobs()
    assert [Path(job.problem_dir) for job in jobs] == [
        (mixed_deck / "02_toy_row_max").resolve(), (mixed_deck / "04_kahan_softmax").resolve(),
        (mixed_deck / "1_Toy_Linear_ReLU.py").resolve()]


def test_a_sweep_stops_on_a_bad_problem_before_its_first_run(mixed_deck: Path, tmp_path: Path):
    spec = mixed_deck / "04_kahan_softmax" / "problem.yaml"
    spec.write_text(spec.read_text().replace("regime:", "regime_typo:", 1))
    sweep_path = tmp_path / "sweep.yaml"
    sweep_path.write_text(f"name: bad\nagents: [scripted:giveup]\nproblems: [04_kahan_softmax]\n"
                          f"problems_dir: {mixed_deck}\nruns: {tmp_path / 'runs'}\ndevice: cpu\n")
    with pytest.raises(KernelBenchError) as caught:
        Sweep.load(sweep_path).jobs()
    assert caught.value.diagnostic.path == spec and "regime_typo" in str(caught.value)


def test_a_sweep_refuses_before_its_first_run_a_problem_no_agent_can_be_given(mixed_deck: Path, tmp_path: Path):
    """A KernelBench-Hard problem without their harness beside the deck has no workspace for agents, theirs or ours."""
    from kernelbench.harness.sweep import check_sweep

    sweep_path = tmp_path / "sweep.yaml"
    sweep_path.write_text(f"name: bare\nagents: [scripted:giveup]\nproblems: [02_toy_row_max]\n"
                          f"problems_dir: {mixed_deck}\nruns: {tmp_path / 'runs'}\ndevice: cpu\nsandbox: false\n")
    with pytest.raises(KernelBenchError) as caught:
        check_sweep(Sweep.load(sweep_path))
    assert caught.value.diagnostic.path == (mixed_deck / "02_toy_row_max").resolve()
    assert "an agent cannot be given this problem" in caught.value.diagnostic.message


def test_a_sweep_files_a_single_file_problem_under_its_name(mixed_deck: Path, tmp_path: Path):
    from kernelbench.harness.workspace import check_agents_can_work_on

    sweep_path = tmp_path / "sweep.yaml"
    sweep_path.write_text(f"name: stanford\nagents: [scripted:giveup]\nproblems: [1_Toy_Linear_ReLU]\n"
                          f"problems_dir: {mixed_deck}\nruns: {tmp_path / 'runs'}\ndevice: cpu\nsandbox: false\n")
    sweep = Sweep.load(sweep_path)
    [problem] = sweep.problems()
    check_agents_can_work_on(problem)  # our workspace serves it
    [job] = sweep.jobs()
    assert job.key == ("scripted:giveup", "1_Toy_Linear_ReLU", 1)
    assert job.request().problem.name == "1_Toy_Linear_ReLU"
