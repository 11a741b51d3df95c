"""`kernelbench regrade` end to end on the CPU against a small board written here (tests/foreign/boards/kbh-toy):
resumed across calls, a failing cell of each kind recorded as that cell's outcome, no solution text in the run
directories, a Ctrl-C that loses nothing; then the site's regraded board, its problem pages and its diff page,
built and opened in Chromium."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from kernelbench.results.regraded import compare, failure_kind
from kernelbench.results.run import load_result

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BOARD = HERE / "boards" / "kbh-toy"
DECK = HERE / "decks" / "kbh-toy"
SOLUTIONS = BOARD / "solutions"
OUR_RUN = REPO / "runs" / "20261121_191957_scripted_eager_01_fp8_gemm_t1"

HANG = "20260101_000007_kimi_k2_01_toy_scaled_gemm"
OUT_OF_MEMORY = "20260101_000008_kimi_k2_02_toy_row_max"
EXPECTED = {  # published run id -> (our status, what the diff page says)
    "20260101_000001_claude_opus_01_toy_scaled_gemm": ("PASS", "agree"),
    "20260101_000002_codex_gpt_01_toy_scaled_gemm": ("FAIL", "correctness"),
    "20260101_000003_gemini_pro_01_toy_scaled_gemm": ("INVALID", "integrity"),
    "20260101_000004_claude_opus_02_toy_row_max": ("PASS", "fixed"),
    "20260101_000005_codex_gpt_02_toy_row_max": ("FAIL", "failure"),
    "20260101_000006_gemini_pro_02_toy_row_max": ("FAIL", "failure"),
    HANG: ("FAIL", "failure"),
    OUT_OF_MEMORY: ("FAIL", "failure"),
    "20260101_000009_glm_5_01_toy_scaled_gemm": ("FAIL", "failure"),
    "20260101_000010_glm_5_02_toy_row_max": ("ERR", "failure"),
}
FAILURES = {
    "20260101_000005_codex_gpt_02_toy_row_max": "missing package",
    "20260101_000006_gemini_pro_02_toy_row_max": "compiled for another architecture",
    HANG: "hangs",
    OUT_OF_MEMORY: "out of memory",
    "20260101_000009_glm_5_01_toy_scaled_gemm": "needs CUDA",
    "20260101_000010_glm_5_02_toy_row_max": "no solution file",
}

pytestmark = pytest.mark.slow


def regrade(runs: Path, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelbench", "regrade", str(BOARD / "leaderboard.json"),
                           "--solutions", str(SOLUTIONS), "--deck", str(DECK), "--runs", str(runs),
                           "--device", "cpu", "--shapes", "smoke", *extra],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def regraded(tmp_path_factory) -> Path:
    """The board regraded in three calls: the hanging cell alone (short stage limit), one cell and a stop, the rest."""
    data = tmp_path_factory.mktemp("regraded")
    runs = data / "runs"
    first = regrade(runs, "--only", HANG, "--limit", "check=8")
    assert first.returncode == 0, first.stderr
    again = regrade(runs, "--only", HANG)
    assert again.returncode == 2 and "--resume" in again.stderr  # graded cells are never graded twice silently
    stopped = regrade(runs, "--resume", "--stop-after", "0.1")
    assert stopped.returncode == 3 and "carry on with --resume" in stopped.stderr, stopped.stderr
    assert len(list(runs.iterdir())) == 2
    rest = regrade(runs, "--resume", "--jobs", "2", "--limit", "check=120")
    assert rest.returncode == 0, rest.stderr
    # two gradings at a time: the one out of memory had a neighbour, so it was held back and graded again alone
    assert f"{OUT_OF_MEMORY}_regraded: held back (FAIL, out of memory beside another grading" in rest.stderr
    assert "2 graded earlier, 0 left" in " ".join(rest.stderr.split())
    assert "no problem folder for column 03_toy_missing" in " ".join(rest.stderr.split())
    return data


def test_every_cell_has_its_outcome_and_the_reason(regraded: Path):
    runs = regraded / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(f"{r}_regraded" for r in EXPECTED)
    for run_id, (status, kind) in EXPECTED.items():
        result = load_result(runs / f"{run_id}_regraded")
        diff = compare(result)
        assert (result.status.value, diff.kind) == (status, kind), (run_id, result.grading.reasons)
        assert result.deck == "kbh-h100" and result.gpu == "cpu" and result.source == "regrade:kernelbench-hard"
        if run_id in FAILURES:
            assert failure_kind(result) == FAILURES[run_id], result.grading.reasons
    again = {run_id for run_id in EXPECTED if load_result(runs / f"{run_id}_regraded").provenance.graded_again_alone}
    assert again == {OUT_OF_MEMORY}  # out of memory alone too: that grading is its verdict
    note = load_result(runs / f"{OUT_OF_MEMORY}_regraded").provenance.graded_again_alone
    assert note.startswith("Graded again alone on its device: its first grading ran out of memory") and \
        "OutOfMemoryError" in note
    invalid = compare(load_result(runs / "20260101_000003_gemini_pro_01_toy_scaled_gemm_regraded"))
    assert invalid.classes == (1,) and "library bypass" in invalid.reason and "aten::matmul" in invalid.evidence
    wrong = compare(load_result(runs / "20260101_000002_codex_gpt_01_toy_scaled_gemm_regraded"))
    assert "worst at index" in wrong.reason


def test_run_directories_keep_the_reference_not_the_text(regraded: Path):
    for folder in (regraded / "runs").iterdir():
        result = load_result(folder)
        provenance = result.provenance
        assert provenance.repository == "https://github.com/example/kbh-toy-board"
        assert provenance.commit == "0123456789abcdef0123456789abcdef01234567"
        assert {p.name for p in folder.iterdir()} <= {"result.json", "check.log", "benchmark.log"}
        # the roof the board scored the cell against: its own bandwidth (row max), its GPU's fp32 throughput (gemm)
        roof = provenance.published_ceiling
        assert (roof.value, roof.unit) == ((2039.0, "GB/s") if "row_max" in result.problem else (51.0, "TFLOP/s"))
        published = provenance.published_run_id
        if provenance.sha256 is None:
            assert published == "20260101_000010_glm_5_02_toy_row_max" and result.status.value == "ERR"
            continue
        source = SOLUTIONS / f"{published}_solution.py.txt"
        assert provenance.path == f"solutions/{source.name}"
        assert provenance.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
        assert provenance.upstream_url == (f"https://github.com/example/kbh-toy-board/blob/{provenance.commit}/"
                                           f"solutions/{source.name}")
        body = source.read_text().split('"""')[-1].strip()  # the code below the docstring, whole
        for name in ("result.json", "check.log", "benchmark.log"):
            assert body not in (folder / name).read_text()
        assert provenance.layout == "kernelbench-hard" and provenance.mapping


def _ctrl_c_as_in_a_terminal() -> None:
    """The command as a shell starts it: SIGINT handled and not blocked. A child inherits an ignored or blocked
    SIGINT from the process that starts it, and earlier tests in this pytest process may leave either behind."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_throws_away_only_the_cell_under_way(tmp_path: Path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "kernelbench", "regrade", str(BOARD / "leaderboard.json"),
                             "--solutions", str(SOLUTIONS), "--deck", str(DECK), "--runs", str(runs),
                             "--device", "cpu", "--shapes", "smoke", "--only", HANG],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_ctrl_c_as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not any(runs.glob(".tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # the grading's stages are running
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"regrade still ran 120 s after Ctrl-C; its stderr:\n{err.decode(errors='replace')[-3000:]}")
    assert proc.returncode == 130, err
    assert list(runs.iterdir()) == []  # no half-written cell, no staging folder left behind


# ------------------------------------------------------------------------------------------------- the site

@pytest.fixture(scope="module")
def regraded_site(regraded: Path, tmp_path_factory) -> Path:
    """The regraded board beside a run of our own deck, built by the real build command."""
    if OUR_RUN.is_dir():
        shutil.copytree(OUR_RUN, regraded / "runs" / OUR_RUN.name, dirs_exist_ok=True)
    out = tmp_path_factory.mktemp("site") / "site"
    proc = subprocess.run([sys.executable, "build.py", "--data", str(regraded), "--out", str(out), "--strict"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_regraded_board_is_its_own_board_with_a_diff_page(regraded_site: Path):
    boards = {p.name for p in (regraded_site / "boards").iterdir()}
    assert "kbh-h100-cpu-diff.html" in boards
    diff = (regraded_site / "boards" / "kbh-h100-cpu-diff.html").read_text()
    assert 'id="gaps"' in diff
    # each cell's held-out column: the toy problems declare none, so it is empty, with the reason on hover
    assert "correct on held-out shapes" in diff and "no held-out shapes declared for this problem" in diff
    # the board of real models is the front page; our deck's scripted lines are one click away
    assert "regraded here on" in (regraded_site / "index.html").read_text()
    assert not OUR_RUN.is_dir() or "h100_sxm.html" in boards
    cells = json.loads((regraded_site / "data" / "leaderboard.json").read_text())["cells"]
    decks = {c["deck"] for c in cells}
    assert "kbh-h100" in decks and (not OUR_RUN.is_dir() or "main" in decks)
    # two decks' problems never share a page
    assert (regraded_site / "problems" / "kbh-h100" / "01_toy_scaled_gemm.html").is_file()
    mapping = (regraded_site / "problems" / "kbh-h100" / "01_toy_scaled_gemm.html").read_text()
    assert "How this problem maps onto this grader" in mapping and "stress cases" in mapping
    # the run page of the cell graded again alone says so, and why
    from kernelbench.sitegen.urls import run_url

    page = (regraded_site / run_url(f"{OUT_OF_MEMORY}_regraded")).read_text()
    assert 'class="graded-again-alone">Graded again alone on its device: its first grading ran out of memory' in page


@pytest.mark.browser
def test_diff_page_in_chromium(regraded_site: Path, browser):
    outside: list[str] = []
    errors: list[str] = []
    context = browser.new_context()

    def route(r):
        url = urlparse(r.request.url)
        if url.scheme in ("file", "data", "blob"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto((regraded_site / "index.html").as_uri())  # the board of real models leads
        assert "KernelBench-Hard H100 deck" in page.locator("h1").inner_text()
        page.click("text=The published verdicts against ours")
        page.wait_for_selector("table.diff")
        assert "each board's own ceilings" in page.locator("p.note").first.inner_text()
        rows = page.locator("table.diff tbody tr")
        assert rows.count() == len(EXPECTED)
        disagree = page.locator("table.diff tbody tr.disagree")
        assert disagree.count() == sum(kind != "agree" for _, kind in EXPECTED.values())
        texts = " ".join(disagree.all_inner_texts())
        for needle in ("library bypass", "worst at index", "missing package", "out of memory", "hangs",
                       "compiled for another architecture", "no solution file"):
            assert needle in texts, needle
        agreement = page.locator("table.agreement tbody tr").first.inner_text().split()
        assert agreement[0] == "PASS" and int(agreement[-1]) == 9  # nine cells published PASS
        page.locator("table.diff tbody tr[data-kind=integrity] a").click()
        page.wait_for_selector("#provenance")
        link = page.locator("#provenance a").get_attribute("href")
        assert link.startswith("https://github.com/example/kbh-toy-board/blob/0123456789abcdef")
        assert errors == [] and outside == []
    finally:
        context.close()


def test_a_grading_that_does_not_stop_after_ctrl_c_is_thrown_away(tmp_path: Path, monkeypatch):
    """A grading blocked outside any stage would keep the process alive after Ctrl-C (the pool's threads are
    joined at exit): after the grace period its staging folder goes and the process ends with 130."""
    import threading
    from concurrent.futures import Future
    from types import SimpleNamespace

    from kernelbench.harness import regrade
    from kernelbench.results.rundir import STAGING_PREFIX

    stuck = Future()
    stuck.set_running_or_notify_cancel()  # running: cancel() cannot stop it
    job = SimpleNamespace(run_id="cell_regraded")
    staging = tmp_path / f"{STAGING_PREFIX}cell_regraded-abc"
    staging.mkdir()
    (tmp_path / "other_regraded").mkdir()
    monkeypatch.setattr(regrade, "CANCEL_GRACE_S", 0.3)

    def exit_now(code):
        raise SystemExit(code)

    monkeypatch.setattr(regrade.os, "_exit", exit_now)
    with pytest.raises(SystemExit) as ended:
        regrade.cancel_gradings(SimpleNamespace(cancelled=threading.Event(), timeline=regrade.CellTimeline()),
                                {stuck: job}, tmp_path)
    assert ended.value.code == 130
    assert not staging.exists() and (tmp_path / "other_regraded").is_dir()


def _regrade_one_cell(tmp_path: Path, *flags: str) -> None:
    """`kernelbench regrade` of the toy board's first cell on the CPU, with `flags` added."""
    from kernelbench.cli import main as kernelbench_main

    try:
        kernelbench_main(["regrade", str(BOARD / "leaderboard.json"), "--solutions", str(SOLUTIONS), "--deck",
                          str(DECK), "--runs", str(tmp_path / "runs"), "--device", "cpu", "--shapes", "smoke",
                          "--only", "20260101_000001_claude_opus_01_toy_scaled_gemm", *flags])
    except SystemExit:
        pass


@pytest.mark.parametrize("flag, expected", [((), False), (("--sanitizer", "on"), True)])
def test_the_sanitizer_option_reaches_every_grading(tmp_path: Path, monkeypatch, flag, expected):
    """`kernelbench regrade --sanitizer on` grades each cell with the sanitizer stage (a measurement over published
    cells); off by default, as for kernelbench grade."""
    from kernelbench.eval import grade

    seen: list[bool] = []

    def graded(*args, **kwargs):
        seen.append(kwargs["sanitizer"])
        raise RuntimeError("stand-in grading: what it was asked is all this test needs")

    monkeypatch.setattr(grade, "grade_solution", graded)
    _regrade_one_cell(tmp_path, *flag)
    assert seen == [expected]


@pytest.mark.parametrize("flag, timing, counters", [((), True, True), (("--timing", "off"), False, False)])
def test_timing_off_reaches_every_grading_and_takes_the_counter_pass_with_it(tmp_path: Path, monkeypatch, flag,
                                                                            timing, counters):
    """`kernelbench regrade --timing off` grades each cell with no measuring stage: neither the timing nor the
    counter pass, so no grading waits for the GPU's measuring turn (a survey of the sanitizer over the board)."""
    from kernelbench.eval import grade

    seen: list[tuple[bool, bool]] = []

    def graded(*args, **kwargs):
        seen.append((kwargs["timing"], kwargs["counters"]))
        raise RuntimeError("stand-in grading: what it was asked is all this test needs")

    monkeypatch.setattr(grade, "grade_solution", graded)
    _regrade_one_cell(tmp_path, *flag)
    assert seen == [(timing, counters)]


def test_timing_off_wants_a_runs_folder_of_its_own(capsys):
    """Gradings with no median are no board's cells: they never go to the default runs/ unasked."""
    from kernelbench.cli import main as kernelbench_main

    code = kernelbench_main(["regrade", str(BOARD / "leaderboard.json"), "--solutions", str(SOLUTIONS), "--deck",
                             str(DECK), "--device", "cpu", "--timing", "off"])
    err = capsys.readouterr().err
    assert code != 0 and "--timing off" in err and "--runs" in err
