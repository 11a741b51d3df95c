"""`kernelbench annotate new|check|todo` end to end, through the real command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from results_builders import SOLUTION

from kernelbench.cli import main
from kernelbench.fileio import load_yaml
from kernelbench.results.dataset import QuoteState, load_dataset

RUN = "20260101_000000_claude_opus_01_demo"


def fill_todos(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for placeholder in ("TODO: one paragraph on what the solution does and why the verdict.",
                        "TODO: what this means for the score.", "TODO: what these lines show"):
        text = text.replace(placeholder, "written by the auditor")
    path.write_text(text, encoding="utf-8")


def test_new_copies_quotes_verbatim_and_check_flags_the_skeleton(tmp_path, make_run, capsys):
    make_run(RUN, peak=0.42)
    data = ["--data", str(tmp_path)]
    assert main(["annotate", "new", RUN, "--verdict", "rubric_leak", "--quote", "solution.py:4-6",
                 "--quote", "solution.py:1", *data]) == 0
    path = tmp_path / "annotations" / f"{RUN}.yaml"
    written = load_yaml(path)
    assert written["peak_fraction"] == 0.42 and written["problem"] == "01_demo"
    lines = SOLUTION.splitlines(keepends=True)
    assert written["quotes"][0]["text"] == "".join(lines[3:6])  # tab, trailing spaces and unicode intact
    assert written["quotes"][1]["text"] == lines[0] and written["quotes"][1]["lines"] == [1, 1]
    capsys.readouterr()
    assert main(["annotate", "check", *data]) == 1  # TODO placeholders are still there
    out = capsys.readouterr().out
    assert f"{path}:" in out and "still the skeleton's TODO text" in out and "2 verified" in out
    fill_todos(path)
    assert main(["annotate", "check", *data]) == 0


def test_check_reports_a_quote_that_no_longer_matches(tmp_path, make_run, capsys):
    run_dir = make_run(RUN)
    assert main(["annotate", "new", RUN, "--verdict", "clean", "--summary", "fine", "--quote", "solution.py:4-5",
                 "--data", str(tmp_path)]) == 0
    fill_todos(tmp_path / "annotations" / f"{RUN}.yaml")
    (run_dir / "solution.py").write_text(SOLUTION.replace("x * 2", "x * 3"), encoding="utf-8")
    capsys.readouterr()
    assert main(["annotate", "check", "--data", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{RUN}.yaml:" in out and "line 5 differs" in out
    assert load_dataset(tmp_path).annotations[RUN].quote_checks[0].state is QuoteState.MISMATCH


def test_new_refuses_to_overwrite_and_rejects_bad_input(tmp_path, make_run, capsys):
    make_run(RUN)
    base = ["annotate", "new", RUN, "--verdict", "clean", "--runs", str(tmp_path / "runs"),
            "--annotations", str(tmp_path / "notes")]
    assert main(base) == 0
    before = (tmp_path / "notes" / f"{RUN}.yaml").read_text()
    assert main(base + ["--summary", "other"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "notes" / f"{RUN}.yaml").read_text() == before
    assert [p.name for p in (tmp_path / "notes").iterdir()] == [f"{RUN}.yaml"]  # no temp files left
    assert main(["annotate", "new", "nope", "--verdict", "clean", "--data", str(tmp_path)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    for quote in ("solution.py:9-99", "solution.py:5-2", "missing.py:1-2", "../secret:1-1", "solution.py"):
        assert main(["annotate", "new", RUN, "--verdict", "bug", "--quote", quote,
                     "--annotations", str(tmp_path / "other"), "--data", str(tmp_path)]) == 2, quote
    assert not (tmp_path / "other").exists()


def test_check_on_broken_annotations_lists_every_problem(tmp_path, make_run, capsys):
    make_run(RUN)
    folder = tmp_path / "annotations"
    folder.mkdir()
    (folder / f"{RUN}.yaml").write_text("run_id: x\nverdict: wonderful\nsummary: s\n")
    (folder / "ghost.yaml").write_text("run_id: ghost\nverdict: clean\nsummary: s\n")
    assert main(["annotate", "check", "--data", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{RUN}.yaml:2:" in out and "ghost.yaml:1: annotation for unknown run 'ghost'" in out


def test_todo_lists_unaudited_cells(tmp_path, make_run, capsys):
    make_run(RUN, peak=0.5)
    make_run("20260101_000001_codex_x_02_other", harness="codex", model="x", problem="02_other", peak=0.05)
    assert main(["annotate", "todo", "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert RUN in out and "02_other" not in out and "1 unaudited" in out
    assert main(["annotate", "todo", "--data", str(tmp_path), "--threshold", "0.01"]) == 0
    assert "2 unaudited" in capsys.readouterr().out
    assert main(["annotate", "new", RUN, "--verdict", "clean", "--summary", "ok", "--data", str(tmp_path)]) == 0
    assert main(["annotate", "todo", "--data", str(tmp_path)]) == 0
    assert "0 unaudited" in capsys.readouterr().out


def test_help_shows_examples():
    for args in (["import", "kernelbench-hard", "--help"], ["annotate", "new", "--help"],
                 ["annotate", "check", "--help"], ["annotate", "todo", "--help"]):
        proc = subprocess.run([sys.executable, "-m", "kernelbench", *args], capture_output=True, text=True, check=False,
                              timeout=60)
        assert proc.returncode == 0 and "example" in proc.stdout, args
