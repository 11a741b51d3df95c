"""The one writer of run directories (kernelbench/results/rundir.py): staged and renamed into place, an interruption
leaves what existed intact, nothing overwritten unless asked, one GPU key rule, one field of result.json set in
place."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

import pytest
from results_builders import result

from kernelbench.errors import KernelBenchError
from kernelbench.results.run import OwnCheckerRun, Provenance, load_result
from kernelbench.results.rundir import (
    OWNER_FILE,
    STAGING_PREFIX,
    Saved,
    discard_staging,
    gpu_key,
    remove_stale_staging,
    replace_result_field,
    save_result,
    staged_run,
)

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted(p for p in (REPO / "runs").iterdir() if (p / "result.json").is_file())
VERDICT = OwnCheckerRun(outcome="FAIL", exit_code=1, seconds=2.5, script="check.py",
                        output_tail="FAIL: max diff 3.0e-01 at (0, 1)\n\"quoted\" ünïcode", isolation="bwrap")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------------------------ staging

def test_a_run_is_written_in_a_hidden_folder_and_renamed_into_place(tmp_path: Path):
    run_result = result("r1")
    with staged_run(tmp_path, "r1") as run:
        assert run.path.parent == tmp_path and run.path.name.startswith(f"{STAGING_PREFIX}r1-")
        assert (run.path / OWNER_FILE).read_text().split()[1] == str(os.getpid())
        run.write_grade_logs("check\n", "bench\n")
        assert not (tmp_path / "r1").exists()  # nothing under the final name until it is whole
        final = run.publish(run_result)
    assert final == tmp_path / "r1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1"]  # no staging folder left
    assert sorted(p.name for p in final.iterdir()) == ["benchmark.log", "check.log", "result.json"]
    assert (final / "result.json").read_text() == run_result.dump_json()
    assert (final / "check.log").read_text() == "check\n" and (final / "benchmark.log").read_text() == "bench\n"
    # the staging folder was private (mkdtemp); the run is readable like every other file the project writes
    assert _mode(final) == 0o755 and all(_mode(p) == 0o644 for p in final.iterdir())


def test_an_interrupted_write_leaves_the_runs_folder_as_it_was(tmp_path: Path):
    with staged_run(tmp_path, "old") as run:
        run.publish(result("old"))
    before = (tmp_path / "old" / "result.json").read_bytes()
    with pytest.raises(KeyboardInterrupt), staged_run(tmp_path, "new") as run:
        run.write_text("check.log", "half\n")
        raise KeyboardInterrupt
    with pytest.raises(RuntimeError), staged_run(tmp_path, "old") as run:  # the same name again, failing midway
        run.write_text("result.json", "{}")
        raise RuntimeError("grader crashed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]
    assert (tmp_path / "old" / "result.json").read_bytes() == before


def test_an_existing_run_is_never_overwritten(tmp_path: Path):
    with staged_run(tmp_path, "r1") as run:
        run.publish(result("r1", status="pass"))
    before = (tmp_path / "r1" / "result.json").read_bytes()
    with staged_run(tmp_path, "r1") as run:
        with pytest.raises(KernelBenchError, match="already exists; it was not overwritten"):
            run.publish(result("r1", status="fail"))
        kept = run.keep_as_conflict()  # what an unpacked run does with its name taken
    assert (tmp_path / "r1" / "result.json").read_bytes() == before
    assert kept.name.startswith(".conflict-.tmp-r1-") and not (kept / OWNER_FILE).exists()
    assert load_result(kept).status.value == "FAIL"


def test_stale_staging_is_removed_only_when_its_writer_is_gone(tmp_path: Path):
    with staged_run(tmp_path, "a") as live, staged_run(tmp_path, "b") as dead:
        (live.path / OWNER_FILE).write_text(f"{os.uname().nodename} {os.getppid()}\n")  # a live process, not us
        (dead.path / OWNER_FILE).write_text(f"{os.uname().nodename} 999999999\n")
        assert remove_stale_staging(tmp_path) == [dead.path]
        assert live.path.exists()
        discard_staging(tmp_path, "a")  # a writer that will never finish
        assert not live.path.exists()


def test_the_submission_folder_becomes_sources_without_the_solution(tmp_path: Path):
    with staged_run(tmp_path, "r1") as run:
        run.submission_dir.mkdir()
        (run.submission_dir / "solution.py").write_text("x = 1\n")
        (run.submission_dir / "kernel.cu").write_text("// cuda\n")
        run.keep_solution(run.submission_dir / "solution.py")
        run.keep_submission()
        run.note_left_out([])
        final = run.publish(result("r1"))
    assert sorted(str(p.relative_to(final)) for p in final.rglob("*")) == [
        "result.json", "solution.py", "sources", "sources/kernel.cu"]
    with staged_run(tmp_path, "r2") as run:
        run.submission_dir.mkdir()
        (run.submission_dir / "solution.py").write_text("x = 1\n")
        run.keep_submission()
        run.note_left_out(["big.bin (300000 bytes)"])
        final = run.publish(result("r2"))
    assert sorted(str(p.relative_to(final)) for p in final.rglob("*")) == [
        "result.json", "workspace", "workspace/.left_out.txt"]


# ------------------------------------------------------------------------------------------------ result.json

def test_a_saved_result_replaces_a_differing_one_only_when_asked(tmp_path: Path):
    first, second = result("r1", status="pass"), result("r1", status="fail")
    assert save_result(tmp_path, first) is Saved.NEW
    (tmp_path / "r1" / "notes.txt").write_text("an auditor's file")
    assert save_result(tmp_path, first) is Saved.UNCHANGED
    assert save_result(tmp_path, second) is Saved.KEPT
    assert load_result(tmp_path / "r1") == first
    assert save_result(tmp_path, second, replace=True) is Saved.REPLACED
    assert (tmp_path / "r1" / "result.json").read_text() == second.dump_json()
    assert (tmp_path / "r1" / "notes.txt").read_text() == "an auditor's file"  # the folder's other files stay
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1"]


def _regraded(tmp_path: Path, **provenance) -> Path:
    run = result("r1_regraded", source="regrade:kernelbench-hard")
    run.provenance = Provenance(repository="https://github.com/example/board", commit="0" * 40, path="s.py",
                                board="board", published_run_id="r1", published_status="PASS", **provenance)
    assert save_result(tmp_path, run) is Saved.NEW
    return tmp_path / "r1_regraded"


def test_setting_a_field_of_a_current_file_writes_what_the_whole_model_would(tmp_path: Path):
    folder = _regraded(tmp_path)
    expected = load_result(folder)
    assert expected.provenance is not None
    expected.provenance.own_checker = VERDICT
    assert replace_result_field(folder, ("provenance", "own_checker"), VERDICT) == expected
    assert (folder / "result.json").read_text() == expected.dump_json()
    replace_result_field(folder, ("provenance", "own_checker"), None)  # and back
    assert (folder / "result.json").read_text() == load_result(folder).dump_json()
    assert load_result(folder).provenance.own_checker is None


def test_setting_a_field_changes_nothing_else_in_an_older_file(tmp_path: Path):
    """A result.json written before fields were added keeps its version and lacks them still: only the field's
    own lines change (the whole model, written back, would add every new field and upgrade the version)."""
    folder = _regraded(tmp_path)
    path = folder / "result.json"
    old = path.read_text().replace('  "version": 2,\n', '  "version": 1,\n').replace(
        '  "deck": "main",\n', '').replace(',\n    "own_checker": null', '').replace(
        ',\n    "own_benchmark": null', '').replace(
        ',\n    "graded_again_alone": ""', '')  # older: no deck, own_checker, own_benchmark nor graded_again_alone
    path.write_text(old)
    replace_result_field(folder, ("provenance", "own_checker"), VERDICT)
    new = path.read_text()
    changed = [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    verdict = VERDICT.model_dump_json(indent=2).replace("\n", "\n    ").splitlines()
    assert changed == ['-    "not_provided": []', '+    "not_provided": [],', f'+    "own_checker": {verdict[0]}',
                       *(f"+{line}" for line in verdict[1:])]
    assert len(changed) == 2 + 8  # the verdict's six members between its braces
    assert '"version": 1,' in new and '"deck"' not in new
    assert load_result(folder).provenance.own_checker == VERDICT


def test_setting_a_field_and_back_leaves_every_committed_run_byte_for_byte(tmp_path: Path):
    """Each committed regraded run given a verdict of its own checker and then the one it held: not a byte moved
    (a file written before the field existed gains just that field)."""
    regraded = [p for p in COMMITTED if load_result(p).provenance is not None]
    assert len(regraded) > 100, "the repository's runs/ holds the regraded cells"
    for folder in regraded:
        original = (folder / "result.json").read_text()
        copy = tmp_path / folder.name
        copy.mkdir()
        (copy / "result.json").write_text(original)
        held = load_result(folder).provenance.own_checker
        assert replace_result_field(copy, ("provenance", "own_checker"), VERDICT).provenance.own_checker == VERDICT
        replace_result_field(copy, ("provenance", "own_checker"), held)
        if '"own_checker"' not in original:
            original = original.removesuffix("\n  }\n}\n") + ',\n    "own_checker": null\n  }\n}\n'
        assert (copy / "result.json").read_text() == original, folder.name


def test_a_field_of_a_missing_part_is_refused_naming_the_file(tmp_path: Path):
    assert save_result(tmp_path, result("r1")) is Saved.NEW
    with pytest.raises(KernelBenchError, match="the run has no provenance") as raised:
        replace_result_field(tmp_path / "r1", ("provenance", "own_checker"), VERDICT)
    assert "r1/result.json" in str(raised.value)
    assert (tmp_path / "r1" / "result.json").read_text() == result("r1").dump_json()


# ------------------------------------------------------------------------------------------------ the GPU key

@pytest.mark.parametrize("device,measured,expected,key", [
    ("cuda", "h200", None, "h200"),              # what the grader measured on
    ("cuda", "h200", "h100_sxm", "h200"),        # ... even where the run was set up for another profile
    ("cuda", "cuda", "h100_sxm", "unknown"),     # the grader found no profile: its device name is no GPU key
    ("cuda", None, "h100_sxm", "h100_sxm"),      # nothing graded: the profile the run was set up for
    ("cuda", "", "b200", "b200"),
    ("cuda", None, None, "unknown"),
    ("cuda", None, "cuda", "unknown"),
    ("cpu", "cpu", None, "cpu"),
    ("cpu", None, "h100_sxm", "cpu"),            # a run on the CPU measured nothing on a GPU
])
def test_one_rule_files_every_run_under_a_gpu(device, measured, expected, key):
    assert gpu_key(device, measured, expected) == key
