"""End-to-end builds of a generated deck: pages, links, exports, incremental rebuilds, inputs untouched."""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kernelbench.sitegen.manifest import MANIFEST_NAME
from kernelbench.sitegen.pipeline import REPO, build_site


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
        if tag == "script":
            self.scripts.append(dict(attrs).get("src") or "")


def parse_links(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_every_page_kind_is_built(built_site: Path, pristine_deck: Path):
    for page in (
        "index.html",
        "runs/index.html",
        "problems/index.html",
        "agents/index.html",
        "audits.html",
        "writeups/index.html",
        "writeups/fp8-leak.html",
        "problems/01_fp8_gemm.html",
        "static/plotly.min.js",
        "static/site.js",
        "data/leaderboard.json",
        "data/leaderboard.csv",
    ):
        assert (built_site / page).is_file(), page
    run_ids = sorted(p.name for p in (pristine_deck / "runs").iterdir())
    assert sorted(p.name for p in (built_site / "runs").iterdir() if p.is_dir()) == run_ids


def test_every_local_link_resolves_and_nothing_points_off_site(built_site: Path):
    pages = list(built_site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        parsed = parse_links(page)
        for link in parsed.links:
            assert not re.match(r"^(https?:)?//", link), f"{page}: off-site link {link}"
            target = link.split("#")[0]
            if not target or target.startswith(("mailto:", "data:")):
                continue
            assert (page.parent / target).resolve().exists(), f"{page}: broken link {link}"


def test_leaderboard_links_every_cell_to_its_run(built_site: Path):
    board = json.loads((built_site / "data" / "leaderboard.json").read_text())
    html = (built_site / "index.html").read_text()
    for cell in board["cells"]:
        assert f'href="runs/{cell["run_id"]}/index.html"' in html
    assert "Scripted baselines" in html and "scripted/reference-copy" in html


def test_exports_have_the_documented_fields(built_site: Path):
    board = json.loads((built_site / "data" / "leaderboard.json").read_text())
    assert set(board) == {"generated", "cells"}
    fields = {
        "agent",
        "harness",
        "model",
        "effort",
        "deck",
        "problem",
        "gpu",
        "status",
        "peak_fraction",
        "run_id",
        "n_trials",
        "verdict",
        "held_out",
        "held_out_relative",
    }
    assert board["cells"] and all(set(c) == fields for c in board["cells"])
    with open(built_site / "data" / "leaderboard.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["run_id"] for r in rows] == [c["run_id"] for c in board["cells"]]


def test_run_page_has_header_tabs_and_quotes_in_place(built_site: Path, pristine_deck: Path):
    annotated = sorted((pristine_deck / "annotations").glob("*.yaml"))
    with_quote = next(p for p in annotated if "file: solution.py" in p.read_text())
    html = (built_site / "runs" / with_quote.stem / "index.html").read_text()
    for tab in ("transcript", "solution", "check", "benchmark", "result", "annotation"):
        assert f'id="tab-{tab}"' in html and f'id="panel-{tab}"' in html
    assert 'class="hll"' in html  # the quoted lines highlighted inside the solution
    assert "matches the file" in html
    assert "budget used" in html and "tokens" in html


def test_invalid_run_shows_its_findings(built_site: Path, pristine_deck: Path):
    invalid = [
        p.parent.name
        for p in (pristine_deck / "runs").glob("*/result.json")
        if '"outcome": "invalid"' in p.read_text()
    ]
    assert invalid, "the synthetic deck should hold an INVALID run"
    html = (built_site / "runs" / invalid[0] / "index.html").read_text()
    assert "Integrity findings" in html and "library bypass" in html and "solution.py:8" in html
    assert invalid[0] in (built_site / "audits.html").read_text()


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_build_never_writes_into_its_inputs(config_for, deck: Path, tmp_path: Path):
    before = _tree_digest(deck)
    build_site(config_for(deck, tmp_path / "site"))
    assert _tree_digest(deck) == before


def test_rebuild_without_changes_renders_nothing(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    first = build_site(config_for(deck, out))
    again = build_site(config_for(deck, out))
    assert first.rendered == first.pages and again.rendered == 0
    assert (out / "index.html").is_file() and (out / MANIFEST_NAME).is_file()


def test_one_annotation_edit_rerenders_only_the_pages_that_show_it(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    before = {p: p.stat().st_ino for p in out.rglob("*.html")}
    path = sorted((deck / "annotations").glob("*.yaml"))[0]
    path.write_text(path.read_text().replace("Upcasts to fp32", "Upcasts to FP32 (edited)"))
    report = build_site(config_for(deck, out))
    changed = sorted(str(p.relative_to(out)) for p in out.rglob("*.html") if before.get(p) != p.stat().st_ino)
    assert f"runs/{path.stem}/index.html" in changed
    assert "FP32 (edited)" in (out / "runs" / path.stem / "index.html").read_text()
    assert report.rendered == len(changed) and report.rendered < 8, changed
    assert not any(c.startswith("runs/") and path.stem not in c for c in changed if c != "runs/index.html")


def test_removed_run_disappears_from_the_site(config_for, deck: Path, tmp_path: Path):
    import shutil

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    victim = sorted((deck / "runs").iterdir())[-1]
    shutil.rmtree(victim)
    build_site(config_for(deck, out))
    assert not (out / "runs" / victim.name).exists()


def test_interrupted_build_leaves_the_previous_site(config_for, deck: Path, tmp_path: Path, monkeypatch):
    from kernelbench.sitegen import pipeline

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    before = _tree_digest(out)
    path = sorted((deck / "annotations").glob("*.yaml"))[0]
    path.write_text(path.read_text().replace("Upcasts", "Changed"))

    def explode(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "prune_stale_pages", explode)
    with pytest.raises(KeyboardInterrupt):
        build_site(config_for(deck, out))
    assert _tree_digest(out) == before
    assert not list(tmp_path.glob(".building-*"))


def test_parallel_build_matches_serial(config_for, deck: Path, tmp_path: Path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    build_site(config_for(deck, serial, jobs=1))
    build_site(config_for(deck, parallel, jobs=2))
    a, b = _tree_digest(serial), _tree_digest(parallel)
    a.pop(MANIFEST_NAME), b.pop(MANIFEST_NAME)
    for name in ("data/leaderboard.json",  # holds the build time
                 ".kernelbench-cache/parsed-inputs.pickle", ".kernelbench-cache/inputs.snapshot",  # when inputs were read
                 ".kernelbench-cache/plan.marshal",  # names the record it goes with
                 ".kernelbench-cache/site.json"):  # the site's own id and folder
        a.pop(name), b.pop(name)
    assert a == b


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_folder_swapped_before_the_render_is_shown_as_the_build_opened_it(config_for, deck: Path,
                                                                                 tmp_path: Path, jobs: int):
    """The render workers start before the deck is loaded and open each run folder again: a folder swapped for a
    link to another one after the build opened it is not theirs to show, and its page is the build's own."""
    from unittest import mock

    from kernelbench.sitegen import pipeline

    run = min((deck / "runs").iterdir())
    shown = (run / "check.log").read_text()
    outside = tmp_path / "outside"
    shutil.copytree(run, outside)
    (outside / "check.log").write_text("check.log of the folder swapped in\n")
    render = pipeline.render_changed_pages

    def swap_then_render(*args, **kwargs):
        run.rename(tmp_path / "away")
        os.symlink(outside, run)
        return render(*args, **kwargs)

    out = tmp_path / "site"
    with mock.patch.object(pipeline, "render_changed_pages", swap_then_render):
        report = build_site(config_for(deck, out, jobs=jobs))
    page = (out / "runs" / run.name / "index.html").read_text(encoding="utf-8")
    assert "folder swapped in" not in page
    assert html.escape(shown.splitlines()[0], quote=False) in page
    assert any("changed while the site was being built" in d.message for d in report.diagnostics)
    assert len(list((out / "runs").glob("*/index.html"))) == len(list((deck / "runs").iterdir()))


def test_empty_data_says_how_to_produce_runs(config_for, tmp_path: Path):
    (tmp_path / "data").mkdir()
    build_site(config_for(tmp_path / "data", tmp_path / "site"))
    html = (tmp_path / "site" / "index.html").read_text()
    assert "No runs yet" in html and "kernelbench run" in html and "kernelbench import" in html


def test_command_line_builds_and_has_help(deck: Path, tmp_path: Path):
    help_text = subprocess.run(
        [sys.executable, str(REPO / "build.py"), "--help"], capture_output=True, text=True
    )
    assert help_text.returncode == 0 and "examples:" in help_text.stdout and "--serve" in help_text.stdout
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "build.py"),
            "--data",
            str(deck),
            "--out",
            str(tmp_path / "site"),
            "--strict",
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "pages" in done.stderr


def test_output_inside_the_inputs_is_refused(config_for, deck: Path):
    from kernelbench.errors import KernelBenchError

    with pytest.raises(KernelBenchError, match="inside the input folder"):
        build_site(config_for(deck, deck / "runs" / "site"))


def test_failed_rebuild_keeps_serving_the_previous_site(config_for, deck: Path, tmp_path: Path):
    import shutil

    from kernelbench.sitegen.server import BuildState, Rebuilder

    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    config = config_for(deck, tmp_path / "site", templates_dir=templates)
    state = BuildState()
    rebuilder = Rebuilder(config, state, lambda report, strict: None)
    assert rebuilder.rebuild() and state.build_id == 1
    before = (tmp_path / "site" / "index.html").read_text()
    (templates / "base.html").write_text("{% block content %}{% endblock")  # a template syntax error
    assert not rebuilder.rebuild()
    assert state.build_id == 1
    assert (tmp_path / "site" / "index.html").read_text() == before
    assert not list(tmp_path.glob(".building-*"))


def test_runs_from_two_gpus_give_two_linked_boards(config_for, deck: Path, tmp_path: Path):
    for result_path in sorted((deck / "runs").glob("*/result.json"))[::3]:
        data = json.loads(result_path.read_text())
        data["gpu"] = "h200"
        result_path.write_text(json.dumps(data))
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    board = json.loads((out / "data" / "leaderboard.json").read_text())
    assert {c["gpu"] for c in board["cells"]} == {"h100_sxm", "h200"}
    second = out / "boards" / "h200.html"
    assert second.is_file() and 'href="../index.html"' in second.read_text()
    assert 'href="boards/h200.html"' in (out / "index.html").read_text()
    for link in parse_links(second).links:
        target = link.split("#")[0]
        if target:
            assert (second.parent / target).resolve().exists(), link


def test_run_page_shows_host_bound_samples_where_recorded(config_for, deck: Path, tmp_path: Path):
    """A GPU grading records how many timed samples the host's time set (a launch-bound shape); the run page
    shows the count beside the shape's median, and runs graded before it was recorded show no such column."""
    import json

    results = sorted(p for p in (deck / "runs").glob("*/result.json") if '"median_ms"' in p.read_text())
    recorded, older = results[0], results[1]
    data = json.loads(recorded.read_text())
    for shape in data["grading"]["shapes"]:
        shape["samples_ms"], shape["host_bound_samples"], shape["host_median_ms"] = [0.1] * 30, 7, 0.25
        shape["protocol"] = "buffers"
        shape["protocols"] = {"buffers": {"median_ms": 0.1, "host_median_ms": 0.25, "samples": 30},
                              "tensors": {"median_ms": 1.75, "host_median_ms": 0.25, "samples": 20},
                              "same": {"median_ms": 0.09, "host_median_ms": 0.2, "samples": 20}}
    recorded.write_text(json.dumps(data))
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    html = (out / "runs" / recorded.parent.name / "index.html").read_text()
    assert ">host-bound · host ms</th>" in html and ">7 of 30 · 0.25</td>" in html
    assert ">new tensors ms</th>" in html and ">same inputs ms</th>" in html and ">1.75</td>" in html
    older_html = (out / "runs" / older.parent.name / "index.html").read_text()
    assert "host-bound" not in older_html and "new tensors" not in older_html


def test_problem_page_shows_every_gpus_baseline_lines_and_their_notes(config_for, deck: Path, tmp_path: Path):
    """Lines measured on a second GPU appear on the problem page even with no run there; a line that could not be
    measured shows its reason; notes.yaml explains a line, escaped like any other input."""
    folder = deck / "problems" / "01_fp8_gemm" / "baselines"
    second = json.loads((folder / "h100_sxm.json").read_text())
    second["gpu"], second["gpu_name"] = "h200", "NVIDIA H200"
    second["lines"]["sota"] = {"available": False, "source": "somelib 9.9", "reason": "missing somelib"}
    (folder / "h200.json").write_text(json.dumps(second))
    (folder / "notes.yaml").write_text("sota: 'the library line <script>window.__pwned=1</script> as chosen'\n")
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    html = (out / "problems" / "01_fp8_gemm.html").read_text()
    section = html[html.index("<h2>Baseline lines</h2>"):]
    assert "<h3>h100_sxm" in section and "<h3>h200 (NVIDIA H200)" in section
    assert "somelib 9.9: <span class=\"muted\">not measured: missing somelib</span>" in section
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in section and "<script>window.__pwned" not in html


def test_lines_timed_on_other_problem_files_say_so(config_for, deck: Path, tmp_path: Path):
    """A baselines file records the hash of the problem files it was timed on: where that is not the problem's
    hash now (a shape, the reference or the library line changed since), its heading says so; the same hash, or a
    file that records none, says nothing."""
    from kernelbench.problems.problem import open_problem

    folder = deck / "problems" / "01_fp8_gemm" / "baselines"
    current = json.loads((folder / "h100_sxm.json").read_text())
    current["problem_hash"] = open_problem(deck / "problems" / "01_fp8_gemm").content_hash
    (folder / "h100_sxm.json").write_text(json.dumps(current))
    earlier = {**current, "gpu": "h200", "gpu_name": "NVIDIA H200", "problem_hash": "0" * 64}
    (folder / "h200.json").write_text(json.dumps(earlier))
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    section = (out / "problems" / "01_fp8_gemm.html").read_text().split("<h2>Baseline lines</h2>")[1]
    headings = [h.split("</h3>")[0] for h in section.split("<h3>")[1:]]
    assert [h.startswith("h100_sxm") for h in headings] == [True, False]
    assert "earlier version" not in headings[0]
    assert headings[1].endswith("on an earlier version of this problem's files")


def test_a_bad_notes_file_is_reported_by_name_and_the_rest_loads(deck: Path):
    from kernelbench.results.dataset import load_dataset

    notes = deck / "problems" / "01_fp8_gemm" / "baselines" / "notes.yaml"
    notes.write_text("sota: fine\nsotta: a typo\n")
    dataset = load_dataset(deck, deck / "problems")
    problems = [d for d in dataset.diagnostics if d.path == notes]
    assert problems and "sotta" in problems[0].message
    assert "01_fp8_gemm" not in dataset.baseline_notes and dataset.baselines["01_fp8_gemm"]


def test_a_board_whose_name_asks_for_another_boards_address_gets_its_own(config_for, deck: Path, tmp_path: Path):
    """GPU names come from result.json: `H200` beside `h200` (one address on a case-insensitive disk), and a GPU
    named like another deck's board (`kbh-h100-h200`) must not take over that board's page."""
    results = sorted((deck / "runs").glob("*/result.json"))
    for result_path, gpu in zip(results, ["h200", "H200", "h200-diff"] * len(results)):
        data = json.loads(result_path.read_text())
        data["gpu"] = gpu
        result_path.write_text(json.dumps(data))
    out = tmp_path / "site"
    report = build_site(config_for(deck, out))
    pages = {p.name: p.read_text() for p in (out / "boards").glob("*.html")}
    titled = [re.search(r"<h1>([^<]*)</h1>", text).group(1) for text in pages.values()]
    titled.append(re.search(r"<h1>([^<]*)</h1>", (out / "index.html").read_text()).group(1))
    assert sorted(t.rsplit("— ", 1)[-1] for t in titled) == ["H200", "h200", "h200-diff"]  # three boards, three pages
    moved = [d for d in report.diagnostics if "would be published at" in d.message or "reads the same" in d.message]
    assert moved and all(d.path is not None and d.hint for d in moved), report.diagnostics


def test_a_cell_with_three_valid_scored_trials_shows_their_range(config_for, deck: Path, tmp_path: Path):
    """The board's cell tells the spread across trials only where at least three valid scored passes exist."""
    annotated = {p.stem for p in (deck / "annotations").glob("*.yaml")}
    source = next(p for p in sorted((deck / "runs").glob("*/result.json"))
                  if p.parent.name not in annotated and json.loads(p.read_text())["grading"]["outcome"] == "pass"
                  and json.loads(p.read_text())["grading"]["peak_fraction"] is not None)
    data = json.loads(source.read_text())
    others = [json.loads(p.read_text()) for p in (deck / "runs").glob("*/result.json")]
    cell_runs = [d for d in others if (d["model"], d["problem"]) == (data["model"], data["problem"])]
    for trial, peak in ((7, 0.011), (8, 0.012)):
        copy = dict(data, run_id=f"{data['run_id']}_x{trial}", trial=trial)
        copy["grading"] = dict(data["grading"], peak_fraction=peak, peak_fraction_interval=None)
        folder = deck / "runs" / copy["run_id"]
        folder.mkdir()
        (folder / "result.json").write_text(json.dumps(copy))
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    html = (out / "index.html").read_text()
    link = html[html.index(f'href="runs/{data["run_id"]}/index.html"'):]
    title = link[:link.index(">")]
    assert "scored trials: median" in title and "from 1.1% to " in title, title
    assert f"n={len(cell_runs) + 2}" in link[:link.index("</a>")]


def test_runs_graded_before_the_gpu_was_sampled_still_load_and_show_no_conditions(config_for, deck: Path,
                                                                                   tmp_path: Path):
    older = next(p for p in sorted((deck / "runs").glob("*/result.json")) if '"conditions"' in p.read_text())
    data = json.loads(older.read_text())
    data["grading"].pop("conditions")
    for shape in data["grading"]["shapes"]:
        shape.pop("conditions"), shape.pop("median_interval_ms")
    older.write_text(json.dumps(data))
    out = tmp_path / "site"
    report = build_site(config_for(deck, out, strict=True))
    html = (out / "runs" / older.parent.name / "index.html").read_text()
    assert "GPU during the shape" not in html and 'id="stage-conditions"' not in html
    assert not report.diagnostics  # the older result.json is read as it was written, without a complaint


def test_held_out_timing_is_shown_beside_the_held_out_mark_and_on_the_run_page(config_for, deck: Path,
                                                                               tmp_path: Path):
    """Passing runs timed on their held-out shapes: the board's cells, the export and the run page show the
    relative figure beside held-out ✓, the run page a row per timed shape; a run graded before held-out timing (no
    such fields in its result.json) builds as before, without the figure."""
    passing = [p for p in sorted((deck / "runs").glob("*/result.json"))
               if json.loads(p.read_text())["grading"]["outcome"] == "pass"]
    assert len(passing) >= 2
    *timed, older = passing
    relative = {}
    for i, path in enumerate(timed):
        data = json.loads(path.read_text())
        relative[path.parent.name] = 0.0432 + i / 10
        data["grading"]["held_out"] = {
            "correct": True, "shapes": [{"n": 301}], "heldout_hash": "ab" * 32,
            "checks": [{"shape_index": 0, "seed": 1234567, "case": "heldout:shape", "passed": True}],
            "timings": [{"index": 0, "shape": {"n": 301}, "median_ms": 8.765, "samples_ms": [8.7, 8.765, 8.8],
                         "gbps": 12.5, "fraction": 0.0123}],
            "relative_peak_fraction": relative[path.parent.name], "timing_note": ""}
        path.write_text(json.dumps(data))
    data = json.loads(older.read_text())
    data["grading"]["held_out"] = {"correct": True, "shapes": [{"n": 301}], "checks": [
        {"shape_index": 0, "seed": 7654321, "case": "heldout:shape", "passed": True}]}
    older.write_text(json.dumps(data))
    out = tmp_path / "site"
    report = build_site(config_for(deck, out, strict=True))
    assert not report.diagnostics
    cells = json.loads((out / "data" / "leaderboard.json").read_text())["cells"]
    shown = [c for c in cells if c["run_id"] in relative]
    assert shown and all(c["held_out_relative"] == relative[c["run_id"]] for c in shown)
    assert all(c["held_out_relative"] is None for c in cells if c["run_id"] == older.parent.name)
    index = (out / "index.html").read_text()
    assert all(f"{relative[c['run_id']]:.3g}×" in index for c in shown)
    assert all(f"held-out shapes: {relative[c['run_id']]:.3g}x the published" in index for c in shown)  # heatmap
    page = (out / "runs" / timed[0].parent.name / "index.html").read_text()
    assert 'id="held-out-timing"' in page and "<strong>0.0432×</strong>" in page and "8.77" in page
    assert "heldout-time" in page
    page = (out / "runs" / older.parent.name / "index.html").read_text()
    assert 'id="held-out"' in page and 'id="held-out-timing"' not in page and "heldout-time" not in page


def test_held_out_results_get_a_section_on_the_run_page_and_a_mark_on_the_board(config_for, deck: Path,
                                                                                   tmp_path: Path):
    """Every passing run gets a held-out result, alternately right and wrong: the board marks each shown cell by
    its run's result and exports it, the run page lists the cases with their seeds, and the status stays PASS."""
    marked = {}
    for i, path in enumerate(sorted((deck / "runs").glob("*/result.json"))):
        data = json.loads(path.read_text())
        if data["grading"]["outcome"] != "pass":
            continue
        right = i % 2 == 0
        data["grading"]["held_out"] = {
            "correct": right, "shapes": [{"n": 301}], "heldout_hash": "ab" * 32,
            "note": "" if right else "1 of 1 held-out cases failed",
            "checks": [{"shape_index": 0, "seed": 1234567, "case": "heldout:stress:presorted", "passed": right,
                        "message": "" if right else "got 299, expected 300"}]}
        path.write_text(json.dumps(data))
        marked[path.parent.name] = right
    assert marked
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    board = json.loads((out / "data" / "leaderboard.json").read_text())
    shown = [c for c in board["cells"] if c["run_id"] in marked]
    assert shown and all(c["held_out"] is marked[c["run_id"]] and c["status"] == "PASS" for c in shown)
    index = (out / "index.html").read_text()
    assert ("held-out ✗" in index) == any(not c["held_out"] for c in shown)
    run_id = next(iter(r for r, right in marked.items() if not right), next(iter(marked)))
    page = (out / "runs" / run_id / "index.html").read_text()
    assert 'id="held-out"' in page and "1234567" in page and "heldout:stress:presorted" in page
    assert ("got 299, expected 300" in page) == (not marked[run_id])


def test_render_workers_collect_garbage_though_forked_while_the_build_paused_its_collector():
    import gc

    from kernelbench.sitegen.pipeline import RenderPool
    from kernelbench.transcripts.gcpause import gc_paused

    with gc_paused():  # the build renders with its collector paused, and may start its workers then
        pool = RenderPool.start(2)
    try:
        assert all(pool.executor.submit(gc.isenabled).result() for _ in range(4))
    finally:
        pool.close()


def test_a_build_keeps_no_run_validated_result_and_derives_what_the_whole_results_give(config_for, deck: Path,
                                                                                     tmp_path: Path):
    """The build's load keeps each run's result compact (results.dataset.CompactResult: the hash of its bytes, its
    facts, its run view's own part and its board trial, made as it was loaded), never every validated result at
    once; the boards and run views are those the validated results give, and a trial made against other baselines
    is made again from the file read again, when it is still the file loaded."""
    import gc

    from kernelbench.inputs import InputRefused
    from kernelbench.results.dataset import ParseCache, load_dataset
    from kernelbench.results.leaderboard import build_boards, make_trial, trial_of, with_verdict
    from kernelbench.results.run import RunResult
    from kernelbench.sitegen import views
    from kernelbench.sitegen.manifest import FileHasher
    from kernelbench.sitegen.plan import plan_site

    config = config_for(deck, tmp_path / "site")
    site = plan_site(config, FileHasher(), ParseCache())
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, RunResult)]
    assert all(r.result is None and r.compact is not None for r in site.dataset.runs.values())

    whole = load_dataset(deck, config.resolved_problems_dir())
    assert all(r.result is not None for r in whole.runs.values())
    assert build_boards(whole) == site.boards
    shown = views.shown_runs(site.boards)
    for run_id, record in whole.runs.items():
        assert views.run_view(record, whole, shown) == site.data.runs[run_id]
        assert site.dataset.runs[run_id].full_result() == record.result

    record = site.dataset.runs[min(site.dataset.runs)]
    kept = record.compact.kept_trial()
    record.compact.keep_trial("the hash of other baselines", None)
    facts = record.facts
    made = trial_of(record, site.dataset)  # the result read again through its folder, as it was loaded
    assert made == make_trial(whole.runs[record.run_id].result, whole.annotation_for(record.run_id),
                              whole.baselines_for(facts.problem, facts.gpu, facts.deck))
    assert record.compact.raw is None  # kept only for a run regraded from another board

    result_json = record.path / "result.json"  # rewritten since it was loaded: not taken for what was loaded
    result_json.write_text(result_json.read_text().replace('"trial": 1', '"trial": 2', 1))
    with pytest.raises(InputRefused, match="changed while the site was being built"):
        record.full_result()
    record.compact.keep_trial("the hash of other baselines", kept)
    assert trial_of(record, site.dataset) == with_verdict(kept, site.dataset.annotation_for(record.run_id))
