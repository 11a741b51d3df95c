"""A problem is opened once per command and carried as a value (kernelbench.problems.problem): what the value holds,
the error for a folder that is not a problem, and that one `kernelbench grade` detects the layout once."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.problems import layouts
from kernelbench.problems.problem import Problem, open_problem

REPO = Path(__file__).resolve().parents[2]
KAHAN = REPO / "problems" / "04_kahan_softmax"
STANFORD = REPO / "tests" / "foreign" / "decks" / "stanford-toy" / "2_Toy_Softmax.py"


def test_our_problem_opens_into_a_frozen_value_of_everything_a_command_asks():
    problem = open_problem(KAHAN)
    assert problem.folder == KAHAN and problem.name == "04_kahan_softmax" and problem.id == "04_kahan_softmax"
    assert problem.layout.name == "native" and problem.deck == "main"
    assert problem.content_hash == layouts.layout_of(KAHAN).content_hash(KAHAN) and len(problem.content_hash) == 64
    assert problem.prompt == (KAHAN / "PROMPT.txt").read_text(encoding="utf-8")
    assert problem.reference_file == KAHAN / "reference.py" and problem.library_files == [KAHAN / "sota.py"]
    assert [p.name for p in problem.agent_files()] == ["reference.py", "problem.yaml"]  # never sota.py
    assert {"problem.yaml", "reference.py", "sota.py", "PROMPT.txt"} <= {p.name for p in problem.files}
    assert "check.py" in problem.workspace_templates
    assert problem.row_sum_bound() is not None  # the Kahan problem's bound, read by its layout from the source
    assert problem.baselines_file("h100") == KAHAN / "baselines" / "h100.json"
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.spec = None  # type: ignore[misc]


def test_a_single_file_problem_gets_our_workspace_with_its_file_as_the_reference_and_a_written_prompt():
    problem = open_problem(STANFORD)
    assert problem.layout.name == "stanford-kernelbench" and problem.prompt is None and problem.name == STANFORD.stem
    assert problem.agent_files() == (STANFORD,) and problem.agent_file_name(STANFORD) == "reference.py"
    assert "class ModelNew" in (problem.agent_prompt() or "") and "batch_size = 4" in (problem.agent_prompt() or "")
    assert problem.own_workspace() is None and problem.library_files == []
    assert problem.watched_folder() == STANFORD.parent and problem.row_sum_bound() is None


def test_the_value_is_what_the_folder_held_when_it_was_opened(tmp_path: Path):
    folder = tmp_path / "04_kahan_softmax"
    shutil.copytree(KAHAN, folder)
    problem = open_problem(folder)
    (folder / "reference.py").write_text((folder / "reference.py").read_text() + "\n# edited\n")
    assert problem.content_hash == open_problem(KAHAN).content_hash != open_problem(folder).content_hash


@pytest.mark.parametrize("make, message", [
    (lambda root: root / "99_nothing", "no such problem folder or file"),
    (lambda root: (root / "notes").mkdir() or root / "notes", "not a problem in any known layout"),
])
def test_a_folder_that_is_no_problem_is_a_clear_error_naming_it(tmp_path: Path, make, message):
    path = make(tmp_path)
    with pytest.raises(KernelBenchError, match=message) as caught:
        open_problem(path)
    assert str(path) in str(caught.value) and "→" in str(caught.value)  # the folder, and what to do


def test_an_unreadable_prompt_is_named(tmp_path: Path):
    folder = tmp_path / "04_kahan_softmax"
    shutil.copytree(KAHAN, folder)
    (folder / "PROMPT.txt").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(KernelBenchError, match="cannot read the prompt") as caught:
        open_problem(folder)
    assert "PROMPT.txt" in str(caught.value)


@pytest.fixture
def detections(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every layout detection in this process, by the path detected."""
    seen: list[Path] = []
    detect = layouts.layout_of

    def counted(path):
        seen.append(Path(path))
        return detect(path)

    monkeypatch.setattr(layouts, "layout_of", counted)
    return seen


def test_one_grade_command_detects_the_layout_once(detections: list[Path], tmp_path: Path, capsys):
    from kernelbench.cli import main

    solution = REPO / "solutions" / "eager" / "04_kahan_softmax.py"
    code = main(["grade", str(solution), "--problem", str(KAHAN), "--device", "cpu", "--shapes", "smoke",
                 "--held-out", "off", "--json", "--out", str(tmp_path / "out")])
    assert code in (0, 1) and (tmp_path / "out" / "grade.json").is_file()
    assert detections == [KAHAN]  # the stages' own processes open the grader's copy in theirs


def test_a_problem_value_passes_where_a_folder_did(tmp_path: Path):
    """The library's entry points take the opened value (a command's) or a folder (a script's) alike."""
    from kernelbench.eval.agent_files import write_agent_files

    problem = open_problem(KAHAN)
    assert isinstance(problem, Problem)
    by_value = write_agent_files(problem, tmp_path / "a")
    by_path = write_agent_files(KAHAN, tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in by_value] == [p.relative_to(tmp_path / "b") for p in by_path]
    assert (tmp_path / "a" / "problem.json").read_bytes() == (tmp_path / "b" / "problem.json").read_bytes()
