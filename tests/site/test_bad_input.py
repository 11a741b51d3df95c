"""Broken inputs: the build finishes, names each problem with file and line, leaves the item out or marks it,
and `--strict` fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.sitegen.pipeline import REPO, build_site


def _runs(deck: Path) -> list[Path]:
    return sorted(p for p in (deck / "runs").iterdir() if p.is_dir())


def _annotation_with_quote(deck: Path) -> Path:
    return next(
        p for p in sorted((deck / "annotations").glob("*.yaml")) if "file: solution.py" in p.read_text()
    )


def break_everything(deck: Path) -> dict[str, Path]:
    """One of each kind of broken input; returns what was broken, by kind."""
    runs = _runs(deck)
    broken: dict[str, Path] = {}
    # malformed YAML in an annotation
    bad_yaml = sorted((deck / "annotations").glob("*.yaml"))[-1]
    bad_yaml.write_text("run_id: x\nverdict: [clean\nsummary: oops\n")
    broken["yaml"] = bad_yaml
    # malformed JSON in a result
    (runs[1] / "result.json").write_text('{"run_id": "x",\n  "harness": }\n')
    broken["json"] = runs[1] / "result.json"
    # a run directory without result.json
    (runs[2] / "result.json").unlink()
    broken["missing"] = runs[2]
    # a duplicate run id: a copy of a run under another folder name
    shutil.copytree(runs[3], deck / "runs" / (runs[3].name + "_copy"))
    broken["duplicate"] = deck / "runs" / (runs[3].name + "_copy") / "result.json"
    # a truncated transcript (the last line cut in half)
    transcript = runs[4] / "transcript.jsonl"
    data = transcript.read_bytes()
    transcript.write_bytes(data[: len(data) - 40])
    broken["truncated"] = transcript
    # invalid UTF-8 in a log
    (runs[5] / "check.log").write_bytes(b"shape 0: ok\n\xff\xfe broken bytes\nshape 1: ok\n")
    broken["utf8"] = runs[5] / "check.log"
    # a quote that no longer matches its lines
    quoted = _annotation_with_quote(deck)
    quoted.write_text(quoted.read_text().replace("# tiled kernel launch", "# a line that is not in the file"))
    broken["quote"] = quoted
    return broken


@pytest.fixture
def broken_deck(deck: Path) -> tuple[Path, dict[str, Path]]:
    return deck, break_everything(deck)


def test_build_finishes_and_reports_every_problem_with_its_location(broken_deck, config_for, tmp_path: Path):
    deck, broken = broken_deck
    out = tmp_path / "site"
    report = build_site(config_for(deck, out))
    text = "\n".join(str(d) for d in report.diagnostics)
    for kind, path in broken.items():
        assert str(path) in text, f"{kind}: {path} not reported in\n{text}"
    assert f"{broken['yaml']}:2" in text or f"{broken['yaml']}:3" in text  # YAML error with its line
    assert f"{broken['json']}:2" in text  # JSON error with its line
    assert "duplicate run id" in text
    assert "not valid UTF-8" in text
    assert all(d.hint for d in report.diagnostics if str(d.path) in {str(p) for p in broken.values()})
    assert (out / "index.html").is_file()
    # left out: the unreadable run and the duplicate; marked: the mismatching quote
    assert not (out / "runs" / broken["json"].parent.name).exists()
    assert not (out / "runs" / broken["duplicate"].parent.name).exists()
    page = (out / "runs" / broken["quote"].stem / "index.html").read_text()
    assert "does not match" in page and "a line that is not in the file" in page
    assert "Problems found in the inputs" in (out / "index.html").read_text()


def test_problems_survive_an_incremental_rebuild(broken_deck, config_for, tmp_path: Path):
    deck, _ = broken_deck
    out = tmp_path / "site"
    first = build_site(config_for(deck, out))
    again = build_site(config_for(deck, out))
    assert again.rendered == 0
    assert sorted(map(str, again.diagnostics)) == sorted(map(str, first.diagnostics))


def test_strict_fails_and_plain_build_succeeds_on_broken_input(broken_deck, tmp_path: Path):
    deck, broken = broken_deck
    command = [
        sys.executable,
        str(REPO / "build.py"),
        "--data",
        str(deck),
        "--out",
        str(tmp_path / "site"),
        "--quiet",
    ]
    plain = subprocess.run(command, capture_output=True, text=True)
    strict = subprocess.run(command + ["--strict"], capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    assert strict.returncode == 1
    assert "--strict: failing" in strict.stderr
    assert str(broken["json"]) + ":2" in strict.stderr and "→" in strict.stderr  # file:line and what to do


def test_unknown_verdict_is_reported_with_its_line(deck: Path, config_for, tmp_path: Path):
    path = sorted((deck / "annotations").glob("*.yaml"))[0]
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("verdict:"))
    lines[number - 1] = "verdict: suspicious"
    path.write_text("\n".join(lines) + "\n")
    report = build_site(config_for(deck, tmp_path / "site"))
    assert any(str(d.path) == str(path) and d.line == number for d in report.diagnostics)


def test_result_with_exponent_number_reads_as_a_number(deck: Path, config_for, tmp_path: Path):
    run = _runs(deck)[0]
    data = json.loads((run / "result.json").read_text())
    data["session"]["cost_usd"] = 5e-2
    (run / "result.json").write_text(json.dumps(data))
    report = build_site(config_for(deck, tmp_path / "site"))
    assert not any(str(run) in str(d.path) for d in report.diagnostics)
    assert "$0.05" in (tmp_path / "site" / "runs" / run.name / "index.html").read_text()
