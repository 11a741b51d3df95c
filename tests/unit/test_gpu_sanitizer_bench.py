"""benchmarks/gpu_sanitizer.py: the jobs dealt into parts (one per GPU), the parts merged back under the same
failure rules, and a dry run on the CPU through both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.base.models import SanitizerFinding, SanitizerResult, SanitizerRun
from kernelbench.problems.loader import load_module

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_sanitizer.py"
OOB, RACE = "planted:sanitizer_oob_read.py", "planted:sanitizer_shared_race.py"


@pytest.fixture(scope="module")
def bench():
    return load_module(SCRIPT, "gpu_sanitizer")


def test_every_job_is_dealt_to_exactly_one_part_planted_ones_included(bench):
    jobs = bench.all_jobs(["triton", "eager"], None)
    names = [name for name, _, _ in jobs]
    assert names[:2] == [OOB, RACE] and len(names) == len(set(names)) > 4
    shares = [[name for name, _, _ in bench.dealt(jobs, bench.parse_part(f"{k}/4"))] for k in range(4)]
    assert sorted(n for share in shares for n in share) == sorted(names)
    assert shares[0][0] == OOB and shares[1][0] == RACE and shares[2][0] == names[2]
    assert [len(s) for s in shares] == [len(names[k::4]) for k in range(4)]
    assert bench.dealt(jobs, None) == jobs


@pytest.mark.parametrize("text", ["4/4", "-1/4", "1", "a/b", "1/0"])
def test_a_part_that_is_not_k_of_n_is_refused_with_the_form_it_takes(bench, text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="K"):
        bench.parse_part(text)


def fake_report(name: str) -> dict:
    """A grading report as grade_solution writes it: the oob read caught by memcheck in its kernel, the race
    missed (racecheck clean), eager/04 failing on a report of its own, every other honest solution clean."""
    def run(tool: str, kernel: str | None) -> dict:
        findings = [SanitizerFinding(tool=tool, kernel=kernel, kind="Invalid __global__ read of size 4 bytes",
                                     severity="error", in_reference=False)] if kernel else []
        return SanitizerRun(tool=tool, ran=True, seconds=2.0, findings=findings).model_dump()

    own_kernel = {OOB: "_kahan_softmax_kernel(float*)", "honest:eager/04_kahan_softmax.py": "own_kernel"}.get(name)
    result = SanitizerResult(passed=own_kernel is None, runs=[], seconds=4.0).model_dump()
    result["runs"] = [run("memcheck", own_kernel), run("racecheck", None)]
    outcome = "pass" if own_kernel is None else "check_failed"
    return {"grading": {"outcome": outcome, "reasons": [], "sanitizer": result},
            "stages": {"sanitizer": 4.0}, "wall_s": 9.0}


def graded_parts(bench, tmp_path, monkeypatch, count: int, only: list[str]) -> tuple[list[Path], list[str]]:
    """Every part of a deal run through main(), each grading answered by fake_report."""
    graded: list[str] = []

    def grade(solution, problem, device, shapes, timeout_s, stage_limit_s=None):
        name = next(n for n, p, _ in bench.all_jobs(["triton", "eager"], None) if p == solution)
        graded.append(name)
        return fake_report(name)

    monkeypatch.setattr(bench, "grade", grade)
    folders = []
    for k in range(count):
        folder = tmp_path / f"gpu{k}"
        bench.main(["--out", str(folder), "--device", "cpu", "--part", f"{k}/{count}", "--only", *only])
        folders.append(folder)
    return folders, graded


def read(folder: Path) -> dict:
    return json.loads((folder / "sanitizer.json").read_text())


ONLY = ["planted:", "eager/04", "eager/05", "triton/01"]


def test_each_part_grades_its_share_and_answers_only_for_the_planted_ones_dealt_to_it(bench, tmp_path,
                                                                                       monkeypatch):
    folders, graded = graded_parts(bench, tmp_path, monkeypatch, 2, ONLY)
    first, second = read(folders[0]), read(folders[1])
    assert [e["solution"] for e in first["entries"]] == first["jobs"][0::2]
    assert [e["solution"] for e in second["entries"]] == second["jobs"][1::2]
    assert sorted(graded) == sorted(first["jobs"]) and first["jobs"] == second["jobs"]
    assert first["jobs"] == [OOB, RACE, "honest:triton/01_fp8_gemm.py", "honest:eager/04_kahan_softmax.py",
                             "honest:eager/05_topk_bitonic.py"]
    assert first["finished"] and first["failures"] == []  # the oob read was caught; the race is not its to answer
    assert second["failures"] == ["planted sanitizer_shared_race.py not caught by racecheck in row_peek_kernel",
                                  "honest honest:eager/04_kahan_softmax.py failed on the sanitizer"]


def test_the_merge_puts_the_rows_in_order_and_fails_what_a_single_run_would(bench, tmp_path, monkeypatch):
    folders, _ = graded_parts(bench, tmp_path, monkeypatch, 3, ONLY)
    out = tmp_path / "merged"
    assert bench.main(["--out", str(out), "--merge", *map(str, folders)]) == 1
    merged = read(out)
    assert [e["solution"] for e in merged["entries"]] == merged["jobs"]
    assert merged["failures"] == ["planted sanitizer_shared_race.py not caught by racecheck in row_peek_kernel",
                                  "honest honest:eager/04_kahan_softmax.py failed on the sanitizer"]
    assert [p["part"] for p in merged["parts"]] == ["0/3", "1/3", "2/3"] and not merged["lost"]
    text = (out / "sanitizer.md").read_text()
    assert "| 0/3 |" in text and "- planted sanitizer_shared_race.py not caught" in text


def test_a_part_that_never_reported_loses_its_jobs_and_a_planted_one_missing_everywhere_fails(bench, tmp_path,
                                                                                             monkeypatch):
    folders, _ = graded_parts(bench, tmp_path, monkeypatch, 2, ONLY)
    jobs = read(folders[0])["jobs"]
    (folders[0] / "sanitizer.json").unlink()  # part 0 held the oob read: its process died before writing
    out = tmp_path / "merged"
    assert bench.main(["--out", str(out), "--merge", *map(str, folders)]) == 1
    merged = read(out)
    assert merged["lost"] == jobs[0::2]
    assert "planted sanitizer_oob_read.py not caught by memcheck in _kahan_softmax_kernel (not graded)" in \
        merged["failures"]
    assert any("part 0/2: no report" in f for f in merged["failures"])
    assert any(f.startswith(str(folders[0] / "sanitizer.json")) for f in merged["failures"])


def test_an_unfinished_a_repeated_or_a_foreign_part_is_a_failure(bench, tmp_path, monkeypatch):
    folders, _ = graded_parts(bench, tmp_path, monkeypatch, 2, ["planted:sanitizer_oob", "eager/04", "eager/05"])
    part1 = read(folders[1])
    part1["finished"], part1["entries"] = False, []
    (folders[1] / "sanitizer.json").write_text(json.dumps(part1))
    merged = read_merge(bench, tmp_path, folders + [folders[0]])
    assert any("part 1/2: did not finish" in f for f in merged["failures"])
    assert any("part 0/2 given twice" in f for f in merged["failures"])
    assert merged["lost"] == part1["jobs"][1::2]
    (folders[1] / "sanitizer.json").write_text("{not json")
    merged = read_merge(bench, tmp_path, folders)
    assert any("unreadable" in f and "grade that part again" in f for f in merged["failures"])


def read_merge(bench, tmp_path: Path, folders: list[Path]) -> dict:
    out = tmp_path / "merged"
    bench.main(["--out", str(out), "--merge", *map(str, folders)])
    return read(out)


@pytest.mark.slow
def test_a_dry_run_on_the_cpu_grades_each_part_for_real_and_merges_them(tmp_path):
    """The script as gpu_sanitizer.sh runs it, on the CPU: each part a process grading its share (the sanitizer
    records "cuda only"), then the merge. Two eager solutions, to stay short; the planted ones were not asked for,
    so none is owed."""
    cmd = [sys.executable, str(SCRIPT), "--device", "cpu", "--shapes", "smoke", "--budget-s", "300",
           "--only", "eager/04", "eager/05"]
    parts = [tmp_path / "gpu0", tmp_path / "gpu1"]
    procs = [subprocess.Popen([*cmd, "--out", str(folder), "--part", f"{k}/2"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k, folder in enumerate(parts)]
    logs = [proc.communicate(timeout=600)[0] for proc in procs]
    merged = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--merge", *map(str, parts)],
                            check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, (logs, merged.stdout, merged.stderr)
    report = read(tmp_path)
    assert [e["solution"] for e in report["entries"]] == ["honest:eager/04_kahan_softmax.py",
                                                          "honest:eager/05_topk_bitonic.py"], logs
    assert [e["outcome"] for e in report["entries"]] == ["pass", "pass"], logs
    assert all("cuda only" in e["sanitizer"]["note"] for e in report["entries"])
    assert [len(read(folder)["entries"]) for folder in parts] == [1, 1] and report["failures"] == []


UNREACHED = "honest:eager/05_topk_bitonic.py"
OUT_OF_MEMORY = ("3 of 12 checks failed; first: shape 0 base: the candidate raised: OutOfMemoryError: CUDA out of "
                 "memory. Tried to allocate 2.00 GiB")


def failing_its_checks(bench, name: str) -> dict:
    """fake_report, but eager/05 fails its checks (as beside four other gradings on one GPU) and triton/01's
    grading returns no report at all: neither reaches the sanitizer."""
    from kernelbench.eval.stages.sanitizer import NOT_CORRECT

    if name == UNREACHED:
        return {"grading": {"outcome": "check_failed", "reasons": [OUT_OF_MEMORY],
                            "sanitizer": SanitizerResult(note=NOT_CORRECT).model_dump()},
                "stages": {}, "wall_s": 5.0}
    if name == "honest:triton/01_fp8_gemm.py":
        return {"grading": {"outcome": "no report (exit 1)"}, "stderr": "Traceback ...\nRuntimeError: CUDA error\n",
                "wall_s": 2.0}
    return fake_report(name)


def test_an_honest_solution_that_failed_before_the_sanitizer_is_listed_apart_and_not_vouched_for(bench, tmp_path,
                                                                                                  monkeypatch):
    """It never reached the sanitizer, so it is not counted among those the stage passed: listed apart with its
    first reason, and the closing line says how many of the honest solutions reached the stage."""
    def grade(solution, problem, device, shapes, timeout_s, stage_limit_s=None):
        return failing_its_checks(bench, next(n for n, p, _ in bench.all_jobs(["triton", "eager"], None)
                                              if p == solution))

    monkeypatch.setattr(bench, "grade", grade)
    out = tmp_path / "whole"
    assert bench.main(["--out", str(out), "--device", "cpu", "--only", "eager/04", "eager/06", "eager/05",
                       "triton/01"]) == 1  # eager/04 fails on the sanitizer (fake_report)
    report = read(out)
    assert report["unreached"] == ["honest:triton/01_fp8_gemm.py: no report (exit 1) (RuntimeError: CUDA error)",
                                   f"{UNREACHED}: {OUT_OF_MEMORY}"]
    assert report["failures"] == ["honest honest:eager/04_kahan_softmax.py failed on the sanitizer"]
    text = (out / "sanitizer.md").read_text()
    assert f"Did not reach the sanitizer (failed before it, so nothing is known of them there):\n" \
           f"- honest:triton/01_fp8_gemm.py: no report (exit 1) (RuntimeError: CUDA error)\n" \
           f"- {UNREACHED}: {OUT_OF_MEMORY}\n" in text

    # without a sanitizer failure, the closing line vouches only for the honest solutions that reached the stage
    parts = [tmp_path / "gpu0", tmp_path / "gpu1"]
    for k, folder in enumerate(parts):
        bench.main(["--out", str(folder), "--device", "cpu", "--part", f"{k}/2", "--only", "eager/06", "eager/05",
                    "triton/01"])
    merged = tmp_path / "merged"
    assert bench.main(["--out", str(merged), "--merge", *map(str, parts)]) == 0
    assert read(merged)["unreached"] == report["unreached"]
    text = (merged / "sanitizer.md").read_text()
    assert "no honest solution failed on the sanitizer" not in text
    assert text.rstrip().endswith("of the 3 honest solutions graded, 1 reached the sanitizer and none of them "
                                  "failed on it; 2 did not reach it (listed above).")


def test_when_every_honest_solution_reached_the_sanitizer_the_closing_line_says_none_failed_on_it(bench, tmp_path,
                                                                                                  monkeypatch):
    folders, _ = graded_parts(bench, tmp_path, monkeypatch, 1, ["eager/05", "triton/01"])
    report = read(folders[0])
    assert report["unreached"] == [] and report["failures"] == []
    assert (folders[0] / "sanitizer.md").read_text().rstrip().endswith(
        "Every planted solution graded was caught; no honest solution failed on the sanitizer.")
