"""The built site in headless Chromium: charts render, cells open runs by mouse and keyboard, tabs switch,
no request leaves localhost, planted scripts never run, and the dev server reloads an open page."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser


class Guarded:
    """A page whose every request is checked: file:// and 127.0.0.1 pass, anything else is blocked and kept."""

    def __init__(self, browser):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("file", "data", "blob") or url.hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture
def guarded(browser):
    g = Guarded(browser)
    yield g
    g.close()


def _first_cell(site: Path) -> dict:
    board = json.loads((site / "data" / "leaderboard.json").read_text())
    return board["cells"][0]


def test_heatmap_renders_and_a_click_opens_the_cell_run(built_site: Path, guarded):
    page = guarded.page
    page.goto((built_site / "index.html").as_uri())
    page.wait_for_selector("#heatmap[data-rendered=true] .heatmaplayer", timeout=15000)
    rows = page.locator("table.grid tbody tr")
    n_rows, n_cols = rows.count(), rows.first.locator("td").count()
    expected = rows.first.locator("td").first.locator("a").get_attribute("href")
    box = page.locator("#heatmap .nsewdrag").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / (2 * n_cols), box["y"] + box["height"] / (2 * n_rows))
    page.wait_for_url("**/runs/**/index.html", timeout=10000)
    assert page.url.endswith(expected)
    assert not guarded.errors and not guarded.outside


def test_keyboard_reaches_a_cell_and_opens_it(built_site: Path, guarded):
    page = guarded.page
    page.goto((built_site / "index.html").as_uri())
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("!!document.activeElement.closest('table.grid td')"):
            break
    else:
        pytest.fail("Tab never reached a cell of the leaderboard grid")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    target = page.evaluate("document.activeElement.getAttribute('href')")
    assert target and target.startswith("runs/")
    page.keyboard.press("Enter")
    page.wait_for_url("**/runs/**/index.html", timeout=10000)
    assert page.url.endswith(target)


def test_run_page_tabs_switch_by_mouse_and_keys(built_site: Path, guarded):
    page = guarded.page
    page.goto((built_site / "runs" / _first_cell(built_site)["run_id"] / "index.html").as_uri())
    assert page.locator("#panel-transcript").is_visible()
    page.click("#tab-solution")
    assert page.locator("#panel-solution").is_visible() and not page.locator("#panel-transcript").is_visible()
    page.keyboard.press("ArrowRight")
    assert page.locator("#panel-check").is_visible()
    assert page.evaluate("document.activeElement.id") == "tab-check"
    page.keyboard.press("End")
    assert page.locator("#panel-annotation").is_visible()
    assert not guarded.errors


def test_run_page_shows_each_median_with_its_interval_and_the_gpu_conditions(built_site: Path, guarded):
    page = guarded.page
    board = json.loads((built_site / "data" / "leaderboard.json").read_text())
    scored = next(c for c in board["cells"] if c["peak_fraction"] is not None)
    page.goto((built_site / "runs" / scored["run_id"] / "index.html").as_uri())
    assert "95%" not in page.locator(".runhead .score").inner_text()  # the interval is its own line, in its title
    assert page.locator(".runhead .score .muted").inner_text().count("%") == 2
    stage = page.locator("#stage-conditions")
    assert stage.is_visible() and "SM 1980 MHz (1410–1980)" in stage.inner_text()
    assert stage.locator(".throttled").inner_text() == "throttled 8%"
    rows = page.locator("table:has(th:text('GPU during the shape')) tbody tr")
    assert rows.count() == 2
    quiet, hot = rows.nth(0), rows.nth(1)
    assert "(" in quiet.locator("td").nth(2).inner_text()  # the median's interval beside it
    assert quiet.locator(".throttled").count() == 0
    badge = hot.locator(".throttled")
    assert badge.is_visible() and badge.inner_text() == "throttled 25%"
    assert "hw_thermal_slowdown" in badge.get_attribute("title")
    assert "1410" in hot.inner_text() and "≤83 °C" in hot.inner_text()
    assert not guarded.errors


def test_runs_table_sorts_and_filters(built_site: Path, guarded):
    page = guarded.page
    page.goto((built_site / "runs" / "index.html").as_uri())
    total = page.locator("#runs-table tbody tr").count()
    page.select_option("select[data-column=status]", "PASS")
    visible = page.locator("#runs-table tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    assert all(s == "PASS" for s in visible.evaluate_all("rows => rows.map(r => r.dataset.status)"))
    page.select_option("select[data-column=status]", "")
    page.click("#runs-table thead th:nth-child(6) button")  # peak fraction
    page.click("#runs-table thead th:nth-child(6) button")  # descending
    values = page.locator("#runs-table tbody tr td:nth-child(6)").evaluate_all(
        "cells => cells.map(c => c.dataset.sort).filter(v => v !== '').map(Number)"
    )
    assert values == sorted(values, reverse=True) and len(values) > 1


def test_no_request_leaves_localhost_on_any_kind_of_page(built_site: Path, guarded):
    page = guarded.page
    cell = _first_cell(built_site)
    for rel in (
        "index.html",
        "runs/index.html",
        f"runs/{cell['run_id']}/index.html",
        "audits.html",
        "writeups/fp8-leak.html",
        "agents/index.html",
        f"problems/{cell['problem']}.html",
    ):
        page.goto((built_site / rel).as_uri())
        page.wait_for_load_state("load")
    page.wait_for_selector(".js-plotly-plot", timeout=15000)  # the problem page's roofline drew
    assert guarded.outside == []
    assert guarded.errors == []


def test_planted_scripts_never_run(hostile_site: Path, guarded):
    page = guarded.page
    # one page of each kind, and the run pages carrying the planted model name, transcript and annotations
    run_pages = sorted(hostile_site.glob("runs/*/index.html"))[:3]
    evil_agent = next(p for p in hostile_site.glob("agents/*.html") if "evil" in p.name)
    pages = (
        [
            hostile_site / rel
            for rel in (
                "index.html",
                "runs/index.html",
                "agents/index.html",
                "audits.html",
                "writeups/index.html",
                "writeups/fp8-leak.html",
                "problems/index.html",
                "problems/01_fp8_gemm.html",
            )
        ]
        + [evil_agent]
        + run_pages
    )
    for path in pages:
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        for tab in page.locator("[role=tab]").all():
            tab.click()
        assert page.evaluate("window.__pwned === undefined"), path
    assert guarded.dialogs == []


def test_served_page_reloads_after_an_annotation_edit(deck: Path, tmp_path: Path, config_for, browser):
    from kernelbench.sitegen.server import BuildState, Rebuilder, make_server, start_watching

    config = config_for(deck, tmp_path / "site")
    state = BuildState()
    rebuilder = Rebuilder(config, state, lambda report, strict: None)
    assert rebuilder.rebuild()
    observer = start_watching(config, rebuilder)
    server = make_server(config.out_dir, state, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    guarded = Guarded(browser)
    try:
        annotation = next(p for p in sorted((deck / "annotations").glob("*.yaml")))
        url = f"http://127.0.0.1:{server.server_address[1]}/runs/{annotation.stem}/index.html"
        page = guarded.page
        page.goto(url)
        page.evaluate("window.__before_reload = true")
        time.sleep(0.8)  # let the reload script read the current build id
        annotation.write_text(
            annotation.read_text().replace("Upcasts to fp32", "Upcasts to fp32 (live edit)")
        )
        page.wait_for_function("window.__before_reload === undefined", timeout=15000)
        assert "live edit" in page.content()
        assert guarded.outside == []
    finally:
        guarded.close()
        server.shutdown()
        server.server_close()
        observer.stop()
