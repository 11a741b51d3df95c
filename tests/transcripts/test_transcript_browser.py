"""The viewer in Debian's Chromium, on real fixtures, served over http from a temporary folder (and from file://)."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from kernelbench.transcripts import NormalizedWriter, load, viewer
from kernelbench.transcripts.viewer import write_page

pytestmark = pytest.mark.browser
FINAL_COUNT = "/^\\d+ \\/ \\d+$/.test(document.querySelector('.kbt-count').textContent)"   # search finished
FIXTURES = {
    "claude": "claude-session/claude-35b94415-dd5e-4481-b179-5ae683b817cd.jsonl",
    "opencode": "opencode-export/session__hidden-moon__ses_39b583141ffe5xDtTd3Mc1wh0o.json",
    "codex": "codex-rollout/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site(tx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(viewer, "CHUNK_BYTES", 60_000)         # several chunks even for the mid-sized fixtures
        for name, relative in FIXTURES.items():
            write_page(load(tx / relative), root / name, budget_s=3600)
        write_page(load(_evil_transcript(root / "evil.jsonl")), root / "evil")
    return root


@pytest.fixture(scope="module")
def base_url(site: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == []


def _evil_transcript(path: Path) -> Path:
    payload = ('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
               '<a class="evil" href="javascript:window.__pwned=3">click</a><svg onload="window.__pwned=4"></svg>')
    with NormalizedWriter(path, harness="scripted", model="<script>window.__pwned=5</script>") as log:
        log.user(payload)
        log.thinking(payload)
        call = log.tool_call("Bash", {"command": payload})
        log.tool_result(call, payload + "\n" * 400 + payload)        # cut to a preview; the rest is a blob
        log.file_edit("x.py", f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-{payload}\n+{payload}\n")
        for index in range(400):                                        # enough for chunk files
            log.assistant(f"step {index} {payload} " + "padding " * 60)
    return path


def test_expand_and_collapse(page, base_url: str) -> None:
    page.goto(f"{base_url}/claude/index.html")
    thinking = page.locator("details.ev-thinking").first
    assert thinking.get_attribute("open") is None
    thinking.locator("summary").click()
    assert thinking.get_attribute("open") == ""
    assert thinking.locator("pre").is_visible()
    page.click(".kbt-collapse")
    assert page.locator(".kbt-events details[open]").count() == 0
    page.click(".kbt-expand")
    assert page.locator(".kbt-events details:not([open])").count() == 0


def test_search_next_and_previous(page, base_url: str) -> None:
    page.goto(f"{base_url}/opencode/index.html")
    page.fill(".kbt-q", "apply_patch")            # typing searches by itself (debounced); Enter then moves on
    page.wait_for_function(FINAL_COUNT)

    def position() -> tuple[int, int]:
        at, total = page.text_content(".kbt-count").split(" / ")
        return int(at), int(total)

    first, total = position()
    # the whole transcript (every chunk) was searched, not only the first screen
    assert page.evaluate("document.querySelectorAll('.kbt-events [id^=e-]').length") == 451
    assert total == page.locator("mark.kbt-hit").count() > 30
    assert first == 1
    page.click(".kbt-next")
    assert position() == (2, total)
    current = page.locator("mark.kbt-hit.cur")
    assert current.count() == 1 and current.is_visible() and current.text_content().lower() == "apply_patch"
    page.click(".kbt-prev")
    page.click(".kbt-prev")
    assert position() == (total, total)                        # wraps around
    page.press(".kbt-q", "Enter")
    assert position() == (1, total)


def test_deep_link_into_an_unloaded_chunk(page, base_url: str, site: Path) -> None:
    page.goto(f"{base_url}/codex/index.html")
    index = page.evaluate("JSON.parse(document.querySelector('.kbt-index').textContent)")
    assert len(index["chunks"]) > 2
    target = index["chunks"][-1][0] + 1
    assert page.locator(f"#e-{target}").count() == 0             # not in the page yet
    page.goto(f"{base_url}/codex/index.html#e-{target}")
    page.wait_for_selector(f"#e-{target}.kbt-target")
    box = page.locator(f"#e-{target}").bounding_box()
    assert box is not None and 0 <= box["y"] < 900                 # scrolled into view
    outline = page.evaluate(f"getComputedStyle(document.getElementById('e-{target}')).outlineStyle")
    assert outline == "solid"                                       # and highlighted


def test_anchor_click_updates_the_hash(page, base_url: str) -> None:
    page.goto(f"{base_url}/claude/index.html")
    anchor = page.locator(".kbt-events a.kbt-a").nth(5)
    href = anchor.get_attribute("href")
    anchor.click()
    assert page.evaluate("location.hash") == href
    assert page.locator(f"{href}.kbt-target").count() == 1


def test_diff_renders_highlighted(page, base_url: str) -> None:
    from playwright.sync_api import expect  # auto-waiting: the diff is coloured by script after it opens

    page.goto(f"{base_url}/claude/index.html")
    page.click(".kbt-filters [data-filter=edits]")
    edit = page.locator("details.ev-file_edit").first
    edit.locator("summary").click() if edit.get_attribute("open") is None else None
    expect(edit.locator("pre.kbt-diff .gi").first).to_be_visible()  # inserted lines, styled by pygments (waits)
    color = edit.locator("pre.kbt-diff .gi").first.evaluate("e => getComputedStyle(e).color")
    assert color != edit.locator("pre.kbt-diff").evaluate("e => getComputedStyle(e).color")
    assert "+" in edit.locator("summary .kbt-add").text_content()
    assert page.locator(".ev-tool_call:visible").count() == 0       # the filter hides the rest


def test_diffs_in_later_chunks_coloured_on_arrival(page, base_url: str) -> None:
    """Chunks carry diffs as plain escaped text; the page colours their lines when the chunk arrives."""
    page.goto(f"{base_url}/claude/index.html")
    page.click(".kbt-load-all")
    page.wait_for_function("!document.querySelector('.kbt-chunk[data-empty]')", timeout=60_000)
    edit = page.locator(".kbt-chunk details.ev-file_edit").last
    assert edit.count() == 1
    pre = edit.locator("pre.kbt-diff")
    assert "hl" in pre.get_attribute("class") and pre.locator(".gi, .gd").count() > 0
    assert pre.text_content().startswith("--- ")                   # the text itself is unchanged
    assert page.locator("pre.kbt-diff:not(.hl)").count() == 0


def test_filters_errors_and_thinking(page, base_url: str) -> None:
    page.goto(f"{base_url}/codex/index.html")
    page.click(".kbt-filters [data-filter=errors]")
    visible = page.locator(".kbt-events .ev:visible")
    assert visible.count() > 0
    assert all("is-err" in (visible.nth(i).get_attribute("class") or "") for i in range(visible.count()))
    page.click(".kbt-filters [data-filter=all]")
    assert page.locator(".kbt-events .ev-thinking:visible").count() > 0


def test_injected_script_stays_inert(page, base_url: str) -> None:
    page.goto(f"{base_url}/evil/index.html")
    # the button moves while chunks arrive by scrolling: press it from script
    page.evaluate("document.querySelector('.kbt-load-all') && document.querySelector('.kbt-load-all').click()")
    page.wait_for_selector(".kbt-sentinel[data-done]", state="attached")
    page.click(".kbt-expand")
    page.locator(".kbt-more-text").first.click()
    page.wait_for_function("!document.querySelector('.kbt-more-text')")
    page.fill(".kbt-q", "script")
    page.wait_for_function(FINAL_COUNT)
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".kbt img, .kbt svg, .kbt a.evil, .kbt a[href^='javascript:']").count() == 0
    assert page.locator(".kbt-events script").count() == 0
    full = page.locator("details.ev-tool_result pre").first.text_content()
    assert full.count("<script>window.__pwned=1</script>") == 2       # shown as text, whole


def test_works_from_file_url(page, site: Path) -> None:
    url = (site / "codex" / "index.html").as_uri()
    page.goto(url)
    index = page.evaluate("JSON.parse(document.querySelector('.kbt-index').textContent)")
    target = index["chunks"][2][0]
    page.goto(f"{url}#e-{target}")
    page.wait_for_selector(f"#e-{target}.kbt-target")
    page.evaluate("document.querySelector('.kbt-load-all') && document.querySelector('.kbt-load-all').click()")
    page.wait_for_selector(".kbt-sentinel[data-done]", state="attached")
    assert page.evaluate("document.querySelectorAll('.kbt-events [id^=e-]').length") == index["events"]


def test_copy_button_copies_the_whole_text(browser, base_url: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url)
    page = context.new_page()
    page.goto(f"{base_url}/evil/index.html")
    result = page.locator("details.ev-tool_result").first
    result.locator("summary").click()
    result.locator(".kbt-copy").click()
    page.wait_for_function("document.querySelector('details.ev-tool_result .kbt-copy').textContent === 'copied'")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.count("<script>window.__pwned=1</script>") == 2 and copied.count("\n") >= 400   # blob included
    assert page.evaluate("window.__pwned") is None
    context.close()


NORMALIZED_EVENTS = """() => {
  // the events as a string: elements with sorted attributes, chunk wrappers left out, <pre> by its text (the
  // first screen highlights shell scripts with pygments, chunks show them plain)
  function norm(node) {
    if (node.nodeType === 3) return node.nodeValue;
    if (node.nodeType !== 1) return "";
    if (node.classList.contains("kbt-chunk")) return inner(node);
    var tag = node.tagName.toLowerCase();
    if (tag === "pre") {
      var cls = Array.from(node.classList).filter(function (c) { return c !== "hl"; }).join(" ");
      return "<pre " + cls + ">" + node.textContent + "</pre>";
    }
    var attrs = Array.from(node.attributes).map(function (a) { return a.name + "=" + JSON.stringify(a.value); });
    return "<" + tag + " " + attrs.sort().join(" ") + ">" + inner(node) + "</" + tag + ">";
  }
  function inner(node) { return Array.from(node.childNodes).map(norm).join(""); }
  return inner(document.querySelector(".kbt-events"));
}"""


@pytest.mark.parametrize("name", ["claude", "codex", "opencode", "stream", "evil"])
def test_chunks_built_by_the_page_match_the_server_markup(page, tx: Path, tmp_path: Path, name: str) -> None:
    """The same transcript written once all as first-screen HTML and once almost all as chunk views: after
    loading every chunk, the page holds the same elements with the same texts."""
    if name == "stream":
        source = tx / "claude-stream" / "claude-stream-json-simple.jsonl"      # subagent spans
    else:
        source = _evil_transcript(tmp_path / "evil.jsonl") if name == "evil" else tx / FIXTURES[name]
    session = load(source)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(viewer, "FIRST_SCREEN_BYTES", 10**12)
        write_page(session, tmp_path / "server")
        patch.setattr(viewer, "FIRST_SCREEN_BYTES", 1)
        patch.setattr(viewer, "CHUNK_BYTES", 50_000)
        write_page(session, tmp_path / "page")
    assert len(list((tmp_path / "server" / "transcript").glob("c-*.js"))) == 0
    assert len(list((tmp_path / "page" / "transcript").glob("c-*.js"))) >= 1
    shown = {}
    for which in ("server", "page"):
        page.goto((tmp_path / which / "index.html").as_uri())
        page.evaluate("document.querySelector('.kbt-load-all') && document.querySelector('.kbt-load-all').click()")
        page.wait_for_selector(".kbt-sentinel[data-done]", state="attached", timeout=60_000)
        shown[which] = page.evaluate(NORMALIZED_EVENTS)
    assert shown["page"].count('id="e-') == sum(1 for _ in session.walk())
    assert shown["page"] == shown["server"]
    assert page.evaluate("window.__pwned") is None
