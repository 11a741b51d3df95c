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
