"""sweeps/unpack-runs.sh: a device call's runs.tgz brings home only new, finished runs."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "sweeps" / "unpack-runs.sh"


def _run_dir(root: Path, name: str, outcome: str, note: str = "") -> None:
    run = root / "runs" / name
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({"run_id": name, "grading": {"outcome": outcome}}, indent=2))
    (run / "note.txt").write_text(note)


def test_new_runs_are_added_and_harness_errors_and_existing_runs_left_alone(tmp_path: Path):
    device = tmp_path / "device"
    _run_dir(device, "r1_pass", "pass", "from the device")
    _run_dir(device, "r2_harness", "harness_error")
    _run_dir(device, "r3_existing", "pass", "from the device")
    tgz = tmp_path / "runs.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(device / "runs", arcname="runs")
    home = tmp_path / "home" / "runs"
    _run_dir(tmp_path / "home", "r3_existing", "invalid", "kept")

    done = subprocess.run(["bash", str(SCRIPT), str(tgz), str(home)], capture_output=True, text=True, check=True)

    assert sorted(p.name for p in home.iterdir()) == ["r1_pass", "r3_existing"]
    assert (home / "r1_pass" / "note.txt").read_text() == "from the device"
    assert (home / "r3_existing" / "note.txt").read_text() == "kept"
    assert "1 run directories added" in done.stdout and "1 harness errors left out" in done.stdout


def test_a_missing_archive_is_named(tmp_path: Path):
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "nope.tgz")], capture_output=True, text=True)
    assert done.returncode == 2 and "no such file" in done.stderr and "nope.tgz" in done.stderr


def test_their_checkers_verdict_reaches_a_cell_graded_earlier_and_nothing_else_does(tmp_path: Path):
    """`regrade --own-checker` amends cells graded by an earlier call: that verdict comes home; a result.json that
    differs in anything else (a regrading) never replaces the one at home."""
    def cell(root: Path, name: str, checker, outcome: str = "pass", shape_extra: dict | None = None) -> None:
        run = root / "runs" / name
        run.mkdir(parents=True)
        shape = {"index": 0, "shape": {"n": 1024}, **(shape_extra or {})}
        (run / "result.json").write_text(json.dumps({
            "run_id": name, "harness": "claude", "model": "m", "problem": "05_topk_bitonic", "gpu": "h200",
            "grading": {"outcome": outcome, "shapes": [shape]},
            "provenance": {"repository": "https://github.com/o/r", "commit": "0" * 40, "path": f"{name}.py",
                           "board": "published-h100", "published_run_id": name, "published_status": "PASS",
                           "own_checker": checker}}))

    device, home = tmp_path / "device", tmp_path / "home"
    verdict = {"outcome": "FAIL", "output_tail": "FAIL: shape 0"}
    cell(device, "amended", verdict)
    cell(home, "amended", None)
    cell(device, "regraded", verdict, outcome="invalid")
    cell(home, "regraded", None)
    cell(device, "had_one", verdict)
    cell(home, "had_one", {"outcome": "PASS"})
    # a newer grader writes a field the older one lacked as null: the same result as the model reads it
    cell(device, "newer_fields", verdict, shape_extra={"conditions": None})
    cell(home, "newer_fields", None)
    tgz = tmp_path / "runs.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(device / "runs", arcname="runs")

    done = subprocess.run(["bash", str(SCRIPT), str(tgz), str(home / "runs")], capture_output=True, text=True,
                          check=True)

    def checker_of(name: str):
        return json.loads((home / "runs" / name / "result.json").read_text())["provenance"]["own_checker"]

    assert checker_of("amended")["outcome"] == "FAIL" and checker_of("newer_fields")["outcome"] == "FAIL"
    assert checker_of("regraded") is None and checker_of("had_one")["outcome"] == "PASS"
    assert "2 given their own scripts' results" in done.stdout
    assert not list((home / "runs").rglob("*.partial"))


def test_their_timing_reaches_a_cell_that_has_their_checkers_verdict_already(tmp_path: Path):
    """`regrade --own-benchmark` amends a cell an earlier call gave their checker's verdict: the timing comes home
    beside the verdict kept; a call whose checker's verdict differs from the one at home brings nothing."""
    def cell(root: Path, name: str, checker, timing) -> None:
        run = root / "runs" / name
        run.mkdir(parents=True)
        (run / "result.json").write_text(json.dumps({
            "run_id": name, "harness": "claude", "model": "m", "problem": "05_topk_bitonic", "gpu": "h100_sxm",
            "grading": {"outcome": "pass"},
            "provenance": {"repository": "https://github.com/o/r", "commit": "0" * 40, "path": f"{name}.py",
                           "board": "published-h100", "published_run_id": name, "published_status": "PASS",
                           "own_checker": checker, "own_benchmark": timing}}))

    device, home = tmp_path / "device", tmp_path / "home"
    passed, timing = {"outcome": "PASS"}, {"outcome": "timed", "shape_ms": {"0": 0.169}, "peak_fraction": 0.41}
    cell(device, "timed", passed, timing)
    cell(home, "timed", passed, None)
    cell(device, "other_verdict", {"outcome": "FAIL"}, timing)
    cell(home, "other_verdict", passed, None)
    tgz = tmp_path / "runs.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(device / "runs", arcname="runs")

    done = subprocess.run(["bash", str(SCRIPT), str(tgz), str(home / "runs")], capture_output=True, text=True,
                          check=True)

    def provenance(name: str) -> dict:
        return json.loads((home / "runs" / name / "result.json").read_text())["provenance"]

    assert provenance("timed")["own_benchmark"]["peak_fraction"] == 0.41
    assert provenance("timed")["own_checker"]["outcome"] == "PASS"
    assert provenance("other_verdict")["own_benchmark"] is None
    assert "1 given their own scripts' results" in done.stdout
