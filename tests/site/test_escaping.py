"""Untrusted text (model names, solutions, logs, annotations, transcripts) never reaches a page as markup."""

from __future__ import annotations

from pathlib import Path


def test_no_page_carries_a_live_payload(hostile_site: Path):
    pages = list(hostile_site.rglob("*.html"))
    planted = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "<script>window.__pwned" not in html, page
        assert "<img src=x" not in html, page
        planted += html.count("window.__pwned")
    assert planted > 0, "the payloads should appear, escaped, somewhere"


def test_viewer_chunks_and_exports_hold_no_live_markup(hostile_site: Path):
    for chunk in hostile_site.rglob("runs/*/transcript/*.js"):
        assert "<script>window.__pwned" not in chunk.read_text(encoding="utf-8"), chunk
    export = (hostile_site / "data" / "leaderboard.json").read_text()
    assert "evil</script>" in export  # data exports keep the raw value; they are not HTML


def test_a_held_out_result_is_shown_escaped(hostile_site: Path):
    """The planted run's held-out case name, shape, message and note (conftest.plant_payloads) reach its page as
    text."""
    pages = [p.read_text(encoding="utf-8") for p in hostile_site.rglob("runs/*/index.html")]
    held = [html for html in pages if 'id="held-out"' in html]
    assert len(held) == 1
    assert "heldout:&lt;/script&gt;" in held[0] and "note &lt;/script&gt;" in held[0] and "wrong &lt;/script&gt;" in held[0]
    assert "timing &lt;/script&gt;" in held[0]  # the held-out timing's note


def test_a_sanitizer_result_is_shown_escaped(hostile_site: Path):
    """The planted run's sanitizer kernel, kind, the tool's lines (in a <pre>) and a run's note reach its page as
    text (conftest.plant_payloads)."""
    pages = [p.read_text(encoding="utf-8") for p in hostile_site.rglob("runs/*/index.html")]
    (page,) = [html for html in pages if 'id="sanitizer"' in html]
    assert "k&lt;&lt;/script&gt;" in page and "Invalid read &lt;/script&gt;" in page
    assert '<pre class="sanitizer-evidence">at k+0x10 &lt;/script&gt;' in page and "not run: &lt;/script&gt;" in page
