"""What travels with a solution into its grading (eval.solution_folder): the files beside it that it loads, copied
into the grading's folder and imported from there; never links, hidden or bulky folders, nor unbounded trees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.eval.solution_folder import MAX_FILE_BYTES, copy_solution_folder


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "cutlass" / "include" / "cutlass").mkdir(parents=True)
    (src / "solution.py").write_text("import helpers\n")
    (src / "helpers.py").write_text("X = 1\n")
    (src / "kernels.cu").write_text("__global__ void k() {}\n")
    (src / "cutlass" / "include" / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    (src / ".git").mkdir()
    (src / ".git" / "config.py").write_text("secret = 1\n")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0")
    (src / "notes.bin").write_bytes(b"\0" * 16)
    outside = tmp_path / "outside.py"
    outside.write_text("print('outside')\n")
    (src / "linked.py").symlink_to(outside)
    return src


def test_the_files_a_solution_loads_travel_with_it(tmp_path):
    src = _folder(tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    copy = copy_solution_folder(src / "solution.py", dest)
    copied = {p.as_posix() for p in copy.files}
    assert copied == {"helpers.py", "kernels.cu", "cutlass/include/cutlass/cutlass.h"}
    assert (dest / "solution.py").read_text() == "import helpers\n"
    assert not (dest / "linked.py").exists() and not (dest / ".git").exists()


def test_a_file_too_large_is_left_behind_and_said(tmp_path, monkeypatch):
    import kernelbench.eval.solution_folder as folder

    src = _folder(tmp_path)
    monkeypatch.setattr(folder, "MAX_FILE_BYTES", 8)
    dest = tmp_path / "dest"
    dest.mkdir()
    copy = folder.copy_solution_folder(src / "solution.py", dest)
    assert not (dest / "kernels.cu").exists()
    assert any(s.startswith("kernels.cu:") for s in copy.skipped)
    assert MAX_FILE_BYTES >= 1 << 20


@pytest.mark.slow
def test_a_solution_that_loads_files_beside_it_passes(toy_problem, toy_solutions, tmp_path):
    """An honest solution split over files (a helper module, a source file it reads) grades as one file does."""
    work = tmp_path / "ws"
    (work / "lib").mkdir(parents=True)
    (work / "lib" / "weights_layout.txt").write_text("N K\n")
    (work / "helpers.py").write_text(
        "def combine(x, weight, bias):\n    return (x[:, None, :] * weight[None]).sum(-1) + bias\n")
    honest = (toy_solutions / "honest.py").read_text()
    (work / "solution.py").write_text(
        honest.replace("import torch\n", "import pathlib\n\nimport torch\n\nfrom helpers import combine\n\n"
                       "LAYOUT = (pathlib.Path(__file__).parent / 'lib' / 'weights_layout.txt').read_text()\n", 1)
        .replace("return (x[:, None, :] * self.weight[None]).sum(-1) + self.bias",
                 "return combine(x, self.weight, self.bias)"))
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "grade", str(work / "solution.py"), "--problem",
                           str(toy_problem), "--device", "cpu", "--shapes", "smoke", "--json"],
                          capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    assert report["grading"]["outcome"] == "pass", report["grading"]["reasons"]


def test_before_a_later_stage_the_copy_is_checked_and_planted_bytecode_removed(tmp_path):
    """The grader's copy of the folder accepts new files (a build beside the solution): a .pyc planted to stand in
    for solution.py is removed, a rewritten sidecar is put back and reported, a build folder stays."""
    from types import SimpleNamespace

    from kernelbench.eval.stages.audits import graded_copy
    from kernelbench.problems.loader import file_hashes

    src = _folder(tmp_path)
    dest = tmp_path / "grading" / "solution"
    dest.mkdir(parents=True)
    copy = copy_solution_folder(src / "solution.py", dest)
    module = dest / "solution.py"
    plan = SimpleNamespace(module=module, graded_bytes=module.read_bytes(), solution=src / "solution.py",
                           brought_hashes=file_hashes([dest / rel for rel in copy.files]))
    (dest / "__pycache__").mkdir()
    (dest / "__pycache__" / "solution.cpython-311.pyc").write_bytes(b"planted")
    (dest / "_sol_ext").mkdir()
    (dest / "_sol_ext" / "ext.so").write_bytes(b"built")
    (dest / "kernels.cu").write_text("// rewritten\n")
    state = SimpleNamespace(findings=[])
    graded_copy(plan, state)
    assert not (dest / "__pycache__").exists()
    assert (dest / "_sol_ext" / "ext.so").read_bytes() == b"built"
    assert (dest / "kernels.cu").read_text() == "__global__ void k() {}\n"
    assert [f.evidence for f in state.findings] == ["kernels.cu"]
