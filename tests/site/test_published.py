"""The published RTX PRO 6000 board, imported and rendered: all 84 cells with the board's statuses and values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.sitegen.pipeline import build_site

BOARD = "published/kernelbench-hard-rtxpro6000-2026-04"


@pytest.fixture(scope="module")
def published_site(shared_fixtures: Path, tmp_path_factory) -> tuple[Path, dict]:
    source = shared_fixtures / BOARD
    data = tmp_path_factory.mktemp("imported") / "data"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelbench",
            "import",
            "kernelbench-hard",
            str(source / "leaderboard.json"),
            "--annotations",
            str(source / "annotations"),
            "--baselines",
            str(source / "problem_baselines.json"),
            "--out",
            str(data),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    from kernelbench.sitegen.pipeline import BuildConfig

    out = data.parent / "site"
    build_site(BuildConfig(data_dir=data, out_dir=out, jobs=2))
    return out, json.loads((source / "leaderboard.json").read_text())


def _expected_status(result: dict) -> str:
    if result.get("correct"):
        return "PASS"
    return "FAIL" if result.get("has_solution") else "ERR"


def test_all_84_cells_render_with_the_published_status_and_value(published_site):
    site, published = published_site
    cells = {
        (c["harness"], c["model"], c["problem"]): c
        for c in json.loads((site / "data" / "leaderboard.json").read_text())["cells"]
    }
    expected = {
        (m["harness"], m["model"], p): r for m in published["models"] for p, r in m["results"].items()
    }
    assert len(expected) == 84
    index = (site / "index.html").read_text()
    for key, result in expected.items():
        cell = cells[key]
        assert cell["status"] == _expected_status(result), key
        assert cell["peak_fraction"] == result["peak_fraction"], key
        assert f'href="runs/{cell["run_id"]}/index.html"' in index
        run_page = site / "runs" / cell["run_id"] / "index.html"
        assert "this run has no transcript" in run_page.read_text()


def test_top_agent_seven_published_passes_count_five(published_site):
    """The published board gave its top agent 7/7; two of those passes are annotated rubric leaks, which this
    site shows on the board but does not count."""
    site, published = published_site
    top = max(published["models"], key=lambda m: m["pass_count"])
    assert top["pass_count"] == 7
    index = (site / "index.html").read_text()
    row = index.split(f">{top['harness']}/{top['model']}@{top['effort']}</a>", 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">5/7</td>' in row and row.count("rubric leak") == 2


def test_annotated_leaks_are_listed(published_site):
    site, _ = published_site
    audits = (site / "audits.html").read_text()
    assert "20260428_040539_claude_claude-opus-4-7_01_fp8_gemm" in audits
    assert "Rubric leaks" in audits
