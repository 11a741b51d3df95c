"""The viewer's HTML and chunk files, without a browser: escaping, completeness of chunks, first-screen size."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kernelbench.transcripts import NormalizedWriter, load
from kernelbench.transcripts.markup import items_html
from kernelbench.transcripts.render import PREVIEW_LINES, RenderContext, body
from kernelbench.transcripts.viewer import write_viewer

EVENT_ID = re.compile(r'id="e-(\d+)"')


def chunk_items(path: Path) -> list[dict]:
    """A chunk file's views: the file is one call with a JSON array (data only, nothing else to run) of pieces,
    each an array of items."""
    text = path.read_text()
    match = re.fullmatch(r"KBT\.chunk\((\d+),(\[.*\])\);\n", text, re.DOTALL)
    assert match, path
    return [item for piece in json.loads(match.group(2)) for item in piece]


def chunk_html(path: Path) -> str:
    """The markup the first screen would have for a chunk's views (the page builds the same elements)."""
    return items_html(chunk_items(path))


def index_of(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" class="kbt-index">(.*?)</script>', html).group(1))


def test_every_event_is_in_exactly_one_place(tx: Path, tmp_path: Path) -> None:
    session = load(tx / "opencode-export" / "session__hidden-moon__ses_39b583141ffe5xDtTd3Mc1wh0o.json")
    html = write_viewer(session, tmp_path / "transcript", asset_prefix="../static/")
    index = index_of(html)
    ids = [int(i) for i in EVENT_ID.findall(html)]
    files = sorted((tmp_path / "transcript").glob("c-*.js"))
    assert len(files) == len(index["chunks"]) - 1 >= 1
    for number, path in enumerate(files, start=1):
        chunk_ids = [int(i) for i in EVENT_ID.findall(chunk_html(path))]
        assert chunk_ids[0] == index["chunks"][number][0] and max(chunk_ids) == index["chunks"][number][1]
        ids += chunk_ids
    assert sorted(ids) == list(range(1, index["events"] + 1)) == [e.id for e in session.walk()]
    assert index["prefix"] == "transcript/"


def test_first_screen_under_one_megabyte_for_every_fixture(tx: Path, tmp_path: Path) -> None:
    for path in sorted(tx.glob("*/*")):
        html = write_viewer(load(path), tmp_path / path.stem / "transcript", asset_prefix="")
        assert len(html.encode()) < 1 << 20, path


def test_transcript_content_is_escaped(tmp_path: Path) -> None:
    source = tmp_path / "evil.jsonl"
    payload = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><a href="javascript:alert(1)">x</a>'
    with NormalizedWriter(source, harness="scripted", model='<b onmouseover="x()">m</b>') as log:
        log.user(payload)
        call = log.tool_call('Bash"><script>', {"command": payload})
        log.tool_result(call, payload + "\n" * 500 + payload)      # long: cut to a preview + blob
        log.file_edit('a"<script>.py', f"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-{payload}\n+{payload}\n")
    out = tmp_path / "transcript"
    html = write_viewer(load(source), out, asset_prefix="")
    everything = html + "".join(chunk_html(p) for p in out.glob("c-*.js"))
    for raw in ("<script>", "<img", 'href="javascript:', "<b onmouseover"):
        assert raw not in everything, raw
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    pack = (out / "b-0001.js").read_text()
    assert pack.startswith("KBT.blobs(1,{") and pack.endswith("});\n")
    texts = json.loads(pack[len("KBT.blobs(1,"):-3])        # data: a JSON object of texts
    assert any(text.endswith("\n<script>window.__pwned=1</script>" + payload[33:]) for text in texts.values())


def test_a_cut_body_is_its_preview_then_its_blob() -> None:
    written: dict[str, str] = {}

    def write_blob(key: str, text: str) -> str:
        written[key] = text
        return f"1:{key}"

    ctx = RenderContext(write_blob=write_blob)
    whole = "".join(f"line {n}\n" for n in range(1000))
    _css, preview, _lexer, reference, more = body(whole, ctx, (7, "o"), lines=1001)
    assert preview == "".join(f"line {n}\n" for n in range(PREVIEW_LINES)).removesuffix("\n")
    assert reference == "1:7-o" and preview + written["7-o"] == whole      # the rest only, nothing twice
    assert more == f"show all {len(whole) / 1024:.1f} KB (1,001 lines)"
    assert body("short", ctx, (8, "o")) == ["kbt-pre", "short", None, None, None] and "8-o" not in written


def test_incomplete_banner_and_time_axis(tx: Path, tmp_path: Path) -> None:
    session = load(tx / "codex-rollout" / "rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl")
    html = write_viewer(session, tmp_path / "transcript", asset_prefix="", budget_s=3600)
    assert "Incomplete session." in html
    assert html.count('class="seg seg-') > 10 and "of a 1h 00m budget" in html
    complete = load(tx / "codex-rollout" / "codex-rollout-2026-02-26T15-17-34-019c9b2b-a332-78f3-8bc1-206aefff157c.jsonl")
    assert "Incomplete session." not in write_viewer(complete, tmp_path / "t2", asset_prefix="")


def test_summaries_name_the_tool_and_the_edit(tx: Path, tmp_path: Path) -> None:
    session = load(tx / "claude-session" / "agentcmd-full-session-four.jsonl")
    html = write_viewer(session, tmp_path / "transcript", asset_prefix="")
    html += "".join(chunk_html(p) for p in (tmp_path / "transcript").glob("c-*.js"))
    assert re.search(r'<span class="kbt-k">Edit</span> <span class="kbt-s">NavUser\.tsx .*?'
                     r'<span class="kbt-add">\+19</span> <span class="kbt-del">−0</span>', html)
    assert '<span class="kbt-k">Bash</span>' in html
    assert '<span class="gi">+function getInitials(name: string): string {' in html


def test_rewriting_removes_stale_chunks(tx: Path, tmp_path: Path) -> None:
    out = tmp_path / "transcript"
    write_viewer(load(tx / "opencode-export" / "session__hidden-moon__ses_39b583141ffe5xDtTd3Mc1wh0o.json"), out,
                 asset_prefix="")
    (out / "keep.txt").write_text("not ours")
    write_viewer(load(tx / "codex-exec" / "stream-output-1.jsonl"), out, asset_prefix="")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_rewriting_in_place_gives_the_files_of_a_fresh_write(tx: Path, tmp_path: Path) -> None:
    """Files of the same name are rewritten (truncated), the rest of the earlier write removed: the folder ends as
    a write into an empty folder would leave it, byte for byte."""
    big = tx / "claude-session" / "claude-35b94415-dd5e-4481-b179-5ae683b817cd.jsonl"
    small = tx / "claude-stream" / "claude-stream-json-simple.jsonl"
    used, fresh = tmp_path / "used" / "transcript", tmp_path / "fresh" / "transcript"
    write_viewer(load(big), used, asset_prefix="")
    before = {p.name for p in used.iterdir()}
    html = write_viewer(load(small), used, asset_prefix="")
    assert html == write_viewer(load(small), fresh, asset_prefix="").replace(str(fresh), str(used))
    after = {p.name: p.read_bytes() for p in used.iterdir()}
    assert after == {p.name: p.read_bytes() for p in fresh.iterdir()}
    assert before & after.keys() and before - after.keys()     # some files rewritten, some removed


def test_subagents_are_folded_with_their_counts(tx: Path, tmp_path: Path) -> None:
    session = load(tx / "claude-stream" / "claude-stream-json-simple.jsonl")
    html = write_viewer(session, tmp_path / "transcript", asset_prefix="")
    html += "".join(chunk_html(p) for p in sorted((tmp_path / "transcript").glob("c-*.js")))
    spans = re.findall(r'<details class="ev ev-subagent[^"]*" id="e-\d+"><summary><span class="kbt-k">Subagent</span>'
                       r' <span class="kbt-s">(.*?)</span>', html)
    assert len(spans) == 8
    assert all(re.search(r"\d+ events · \d+ tool calls", s) for s in spans)


def test_chunks_hold_the_views_as_orjson_writes_them(tmp_path: Path) -> None:
    """Chunk files are the views encoded by msgspec into one buffer: the bytes orjson gives each piece, joined,
    for texts of every kind (non-ASCII, line separators, control characters, quotes, lone surrogates, which are
    replaced as they were), over several chunks."""
    import orjson

    from kernelbench.transcripts import viewer
    from kernelbench.transcripts.builder import number_events
    from kernelbench.transcripts.model import Kind, Session, new_event

    texts = ["plain", "é ü 中文 😀", "\ud800 lone \udfff", "a\u2028b\u2029c", "\x00\x1f\x7f\r\t", 'quote " and \\',
             "</script><!--", "\U0010ffff"]
    events = [new_event(Kind.USER if i % 97 == 0 else Kind.ASSISTANT, ts=1767225600.0 + i,
                        text=texts[i % len(texts)] * (20 + i % 60), model="m") for i in range(1500)]
    session = Session(format="test", events=events)
    number_events(session)
    ctx = RenderContext(results={}, cwd=None, write_blob=None)
    pieces = list(viewer._pieces(session, ctx, {"events": 0}))
    _, ranges = viewer._write_chunks(iter(pieces), tmp_path)
    assert len(ranges) > 3

    def dumped(items: list) -> bytes:
        try:
            return orjson.dumps(items)
        except TypeError:
            return orjson.dumps(viewer._without_surrogates(items))

    for number, (first, last) in enumerate(ranges[1:], start=1):
        parts = [dumped(items) for items, first_id, _ in pieces if first <= first_id <= last]
        expected = b"KBT.chunk(%d,[" % number + b",".join(parts) + b"]);\n"
        assert (tmp_path / f"c-{number:04d}.js").read_bytes() == expected, number
