"""The built site fits a 1280 and a 1440 px window: the page never scrolls sideways, no table cell spills or clips
its text, wide tables scroll in their own box with the first column fixed, and chart titles clear the toolbar.
Each page is screenshotted at both widths (under the test's tmp_path) as it is measured."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from kernelbench.sitegen.pipeline import build_site

pytestmark = pytest.mark.browser

WIDTHS = (1280, 1440)
# an auditor's summary with a long URL and path: the text that used to widen the "Leaks & hacks" table
LONG_WHY = ("Read in the published file (https://github.com/example/kernelbench/blob/" + "c7d92211851a18fdba" * 6
            + "/public/runs/h100/20260618_054156_deepseek-claude_deepseek-v4-pro_01_fp8_gemm_solution.py.txt): "
            + "the CUDA source is a string that is never compiled. " * 8)

FIT = """() => ({
  scrollWidth: document.documentElement.scrollWidth,
  viewport: document.documentElement.clientWidth,
  spilled: [...document.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)
             .map(c => c.textContent.trim().slice(0, 60)),
  unboxed: [...document.querySelectorAll('main table')].filter(t => getComputedStyle(t).overflowX !== 'auto')
             .length,
  unpinned: [...document.querySelectorAll('main table tr > :first-child')]
             .filter(c => getComputedStyle(c).position !== 'sticky').length,
})"""

TITLES_CLEAR_TOOLBAR = """() => [...document.querySelectorAll('.js-plotly-plot')].every(plot => {
  const title = plot.querySelector('.gtitle'), bar = plot.querySelector('.modebar');
  if (!title || !bar) return true;
  const t = title.getBoundingClientRect(), b = bar.getBoundingClientRect();
  return t.top >= b.bottom || t.right <= b.left;
})"""


@pytest.fixture(scope="module")
def wide_site(pristine_deck: Path, tmp_path_factory) -> Path:
    """The synthetic deck with every annotation's summary long and full of unbroken words."""
    from kernelbench.sitegen.pipeline import BuildConfig

    root = tmp_path_factory.mktemp("wide")
    deck = root / "data"
    shutil.copytree(pristine_deck, deck)
    for path in sorted((deck / "annotations").glob("*.yaml")):
        loaded = yaml.safe_load(path.read_text())
        loaded["summary"] = LONG_WHY
        path.write_text(yaml.safe_dump(loaded, sort_keys=False))
    out = root / "site"
    build_site(BuildConfig(data_dir=deck, out_dir=out, jobs=1))
    return out


def pages_of(site: Path) -> list[str]:
    run = min(site.glob("runs/*/index.html")).relative_to(site)
    problem = min(p for p in site.glob("problems/*.html") if p.name != "index.html").relative_to(site)
    return ["index.html", "audits.html", "runs/index.html", "problems/index.html", "agents/index.html", str(run),
            str(problem)]


@pytest.mark.parametrize("width", WIDTHS)
def test_pages_fit_the_window(wide_site: Path, browser, width: int, tmp_path: Path):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        for rel in pages_of(wide_site):
            page.goto((wide_site / rel).as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=tmp_path / f"{rel.replace('/', '_')}-{width}.png")
            fit = page.evaluate(FIT)
            assert fit["scrollWidth"] <= fit["viewport"], f"{rel} scrolls sideways at {width} px"
            assert not fit["spilled"], f"{rel} at {width} px: cells whose text spills or is clipped: {fit['spilled']}"
            assert not fit["unboxed"] and not fit["unpinned"], f"{rel}: a table without its scroll box or fixed column"
    finally:
        page.close()


def test_leaks_table_wraps_its_long_why(wide_site: Path, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((wide_site / "audits.html").as_uri())
        table = page.locator("main table").first
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        assert table.evaluate("t => t.scrollWidth <= t.clientWidth"), "the table scrolls instead of wrapping"
        assert "https://github.com/example" in table.inner_text()
    finally:
        page.close()


def test_chart_titles_clear_the_toolbar(wide_site: Path, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((wide_site / "index.html").as_uri())
        page.wait_for_selector("#heatmap[data-rendered=true]", timeout=15000)
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .gtitle').length >= 2", timeout=15000)
        assert page.evaluate(TITLES_CLEAR_TOOLBAR)
    finally:
        page.close()
