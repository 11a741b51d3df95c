"""Unit tests of the pipeline's pieces: URLs, hashing, the manifest, the atomic swap, escaping helpers."""

from __future__ import annotations

import marshal
import os
import time
from pathlib import Path

import pytest

from kernelbench.sitegen import output
from kernelbench.sitegen.manifest import MANIFEST_NAME, FileHasher, FileRecords, Manifest, hash_data
from kernelbench.sitegen.pages import Page, relative_url, slug
from kernelbench.sitegen.render import format_duration, format_number, json_script
from kernelbench.sitegen.runpage import highlight_source
from kernelbench.sitegen.writeups import render_markdown


@pytest.mark.parametrize(
    "src,dst,expected",
    [
        ("index.html", "runs/a/index.html", "runs/a/index.html"),
        ("runs/a/index.html", "index.html", "../../index.html"),
        ("runs/a/index.html", "runs/b/index.html", "../b/index.html"),
        ("problems/x.html", "static/site.css", "../static/site.css"),
        ("problems/x.html", "problems/x.html#top", "x.html#top"),
    ],
)
def test_links_are_relative(src, dst, expected):
    assert relative_url(src, dst) == expected


def test_slug_keeps_clean_names_and_separates_odd_ones():
    assert slug("20260501_000000_codex_gpt-5.5_01_fp8_gemm") == "20260501_000000_codex_gpt-5.5_01_fp8_gemm"
    a, b = slug("claude/opus@max"), slug("claude/opus/max")
    assert a != b and "/" not in a and "@" not in a
    assert "<" not in slug("<script>x</script>")


def test_hash_is_stable_under_key_order_and_sensitive_to_values():
    assert hash_data({"a": 1, "b": [1, 2]}) == hash_data({"b": [1, 2], "a": 1})
    assert hash_data({"a": 1}) != hash_data({"a": 2})


def test_page_fingerprint_depends_on_templates_and_inputs():
    page = Page("x.html", "t.html", "X", {"v": 1})
    other = Page("x.html", "t.html", "X", {"v": 1})
    assert page.fingerprint("T1") == other.fingerprint("T1")
    assert Page("x.html", "t.html", "X", {"v": 1}).fingerprint("T2") != page.digest
    assert Page("x.html", "t.html", "X", {"v": 2}).fingerprint("T1") != page.digest


def test_file_hasher_rehashes_a_changed_file_and_reuses_an_unchanged_one(tmp_path: Path):
    path = tmp_path / "f.txt"
    path.write_text("one")
    first = FileHasher()
    digest = first(path)
    cached = FileHasher(first.seen)
    assert cached(path) == digest
    path.write_text("two")  # same size, new content: the stat signature changes with mtime/size
    os.utime(path, ns=(1, 1))
    assert FileHasher(first.seen)(path) != digest
    assert FileHasher()(tmp_path / "missing") is None


def test_manifest_round_trip(tmp_path: Path):
    records = {"/d/runs/a/result.json": [1, 2, 3, 4, 5, "h1"], "/d/runs/a/solution.py": [6, 7, 8, 9, 10, "h2"],
               "/d/runs/b/result.json": [11, 12, 13, 14, 15, "h3"], "/static/x.js": [1, 1, 1, 1, 1, "h4"],
               "no-folder": [0, 0, 0, 0, 0, "h5"]}
    m = Manifest(pages={"a.html": ["h", [{"path": None, "message": "m", "line": 3, "hint": None,
                                          "severity": "warning"}]]},
                 static={"static/x.js": "s"}, file_hashes=records, started_ns=7)
    (tmp_path / MANIFEST_NAME).write_bytes(m.dump())
    loaded = Manifest.load(tmp_path)
    assert loaded.pages == m.pages and loaded.static == m.static and loaded.started_ns == 7
    assert isinstance(loaded.file_hashes, FileRecords) and dict(loaded.file_hashes) == records
    assert loaded.file_hashes.get("/d/runs/c/x") is None and "/d/runs/a/x" not in loaded.file_hashes
    for broken in (b"{broken", b"", marshal.dumps({"version": 2, "pages": {"a": 1}}), marshal.dumps([1])):
        (tmp_path / MANIFEST_NAME).write_bytes(broken)
        assert Manifest.load(tmp_path).pages == {}


def test_file_records_replaced_leave_the_others_as_read(tmp_path: Path):
    records = {f"/d/runs/{run}/{name}": [run, len(name), "h" + run + name]
               for run in ("a", "b", "c") for name in ("result.json", "solution.py", "transcript.jsonl")}
    (tmp_path / MANIFEST_NAME).write_bytes(Manifest(file_hashes=records).dump())
    loaded = Manifest.load(tmp_path).file_hashes
    assert isinstance(loaded, FileRecords)
    replaced = loaded.replaced(["/d/runs/b/result.json", "/d/runs/b/solution.py", "/d/runs/b/gone.log"],
                               {"/d/runs/b/result.json": ["b", 1, "new"], "/d/runs/d/result.json": ["d", 1, "x"]})
    # folders never looked into are written back as the very bytes read
    packed = replaced.packed()
    assert packed["/d/runs/a"] == marshal.loads((tmp_path / MANIFEST_NAME).read_bytes())["files"]["/d/runs/a"]
    expected = {key: value for key, value in records.items() if key != "/d/runs/b/solution.py"}
    expected["/d/runs/b/result.json"] = ["b", 1, "new"]
    expected["/d/runs/d/result.json"] = ["d", 1, "x"]
    assert dict(replaced) == expected and len(replaced) == len(expected)
    assert dict(loaded) == records  # the records replaced from are left as they were
    emptied = FileRecords.of(records).replaced([f"/d/runs/c/{n}" for n in ("result.json", "solution.py",
                                                                        "transcript.jsonl")], {})
    assert "/d/runs/c" not in emptied.packed()
    assert FileRecords(packed) == expected  # a Mapping compares by its items
    looked_into = Manifest.load(tmp_path).file_hashes
    assert looked_into and FileHasher(looked_into).previous is looked_into and not FileRecords({"/d": {}})
    assert all(isinstance(group, bytes) for group in looked_into._groups.values())  # none decoded to answer


def test_swap_replaces_the_whole_site_and_leaves_no_staging(tmp_path: Path):
    out = tmp_path / "site"
    out.mkdir()
    (out / "old.html").write_text("old")
    staging = output.new_staging_dir(out)
    (staging / "new.html").write_text("new")
    output.swap_in(staging, out)
    assert sorted(p.name for p in out.iterdir()) == ["new.html"]
    assert not list(tmp_path.glob(".building-*"))
    for _ in range(100):  # the previous site is deleted by a detached process
        if not list(tmp_path.glob(".retired-*")):
            break
        time.sleep(0.05)
    assert not list(tmp_path.glob(".retired-*"))


def test_seeding_by_hard_links_never_changes_the_previous_site(tmp_path: Path):
    out = tmp_path / "site"
    (out / "runs" / "a").mkdir(parents=True)
    (out / "runs" / "a" / "index.html").write_text("v1")
    staging = output.new_staging_dir(out)
    output.seed_from_previous(out, staging)
    target = staging / "runs" / "a" / "index.html"
    target.unlink()
    target.write_text("v2")
    assert (out / "runs" / "a" / "index.html").read_text() == "v1"


def test_stale_staging_folders_are_removed(tmp_path: Path):
    out = tmp_path / "site"
    stale = tmp_path / ".building-site-abc"
    stale.mkdir()
    (stale / ".owner-pid").write_text("999999999")
    output.new_staging_dir(out)
    assert not stale.exists()


def test_json_script_cannot_close_its_script_element():
    text = str(json_script({"name": "</script><script>alert(1)</script>", "amp": "a&b"}))
    assert "</script" not in text and "<" not in text and "&b" not in text


def test_formatting():
    assert format_duration(59) == "59s" and format_duration(3725) == "1h02m"
    assert (
        format_number(1979.0) == "1,979" and format_number(0.01234) == "0.0123" and format_number(None) == "—"
    )


def test_highlighted_source_escapes_and_anchors_lines():
    html = str(
        highlight_source(
            "a = '<script>alert(1)</script>'\nb = 2\n",
            __import__("pygments.lexers").lexers.PythonLexer(),
            "solution",
            [2],
        )
    )
    assert "<script>" not in html
    assert 'id="solution-L-2"' in html and 'class="hll"' in html


def test_markdown_links_known_runs_and_keeps_html_inert():
    run = "20260501_000000_codex_gpt-5.5_01_fp8_gemm"
    html = str(
        render_markdown(
            f"See {run}. <script>alert(1)</script> [x](javascript:alert(1))",
            lambda r: f"../runs/{r}/index.html" if r == run else None,
        )
    )
    assert f'<a href="../runs/{run}/index.html">{run}</a>.' in html
    assert "<script>" not in html and 'href="javascript:' not in html


def test_reload_script_is_injected_before_body_end_only_when_served():
    from kernelbench.sitegen.server import BUILD_ID_PATH, inject_reload

    html = inject_reload(b"<html><body><p>x</p></body></html>")
    assert html.index(BUILD_ID_PATH.encode()) < html.index(b"</body>")
    assert inject_reload(b"no body").startswith(b"no body<script>")


def test_server_serves_the_swapped_site_and_its_build_id(tmp_path: Path):
    import threading
    import urllib.request

    from kernelbench.sitegen.server import BUILD_ID_PATH, BuildState, make_server

    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("<html><body>one</body></html>")
    state = BuildState()
    server = make_server(out, state, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert b"one" in urllib.request.urlopen(f"{base}/").read()
        staging = output.new_staging_dir(out)
        (staging / "index.html").write_text("<html><body>two</body></html>")
        output.swap_in(staging, out)
        state.bump()
        assert b"two" in urllib.request.urlopen(f"{base}/index.html").read()
        assert urllib.request.urlopen(base + BUILD_ID_PATH).read() == b"1"
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------------------------ hostile names


def test_a_name_that_squats_another_names_address_gets_its_own():
    from kernelbench.sitegen import urls

    squatter = slug("R0 v")
    clashes = urls.claim("test", [squatter, "R0 v", "CaseRun", "caserun", "caf\u00e9", "cafe\u0301", "index"],
                         reserved=("index",))
    try:
        addresses = [urls.slug_of("test", n) for n in (squatter, "R0 v", "CaseRun", "caserun", "index")]
        assert urls.slug_of("test", "R0 v") == slug("R0 v")  # the name its hash belongs to keeps it
        assert len({a.casefold() for a in addresses}) == len(addresses)
        moved = {c.name for c in clashes if c.moved_to}
        assert moved == {squatter, "caserun", "index"}
        alike = [c for c in clashes if c.moved_to is None]
        assert [{c.name, c.other} for c in alike] == [{"cafe\u0301", "caf\u00e9"}]
    finally:
        urls.forget_claims()


def test_control_bidi_and_zero_width_characters_are_shown_escaped():
    from kernelbench.errors import Diagnostic
    from kernelbench.text import visible

    assert visible("a\x1b[32mb\u200bc\u202ed\x07") == "a\\x1b[32mb\\u200bc\\u202ed\\x07"
    assert visible("é 日本 ✓") == "é 日本 ✓"
    assert visible("two\nlines\t", lines=True) == "two\nlines\t"
    shown = str(Diagnostic(path="runs/\x1b]0;owned\x07", message="bad \x1b[2J", hint="fix \u202e"))
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b]0;owned\\x07" in shown


def test_a_remote_image_in_markdown_becomes_a_link():
    html = str(render_markdown("![a](http://x.invalid/p.png) ![b](//x.invalid/p) ![c](/etc/p.png) ![d](img/d.png)",
                               lambda run_id: None))
    assert html.count("<img") == 1 and '<img src="img/d.png"' in html
    for source in ("http://x.invalid/p.png", "//x.invalid/p", "/etc/p.png"):
        assert f'<a href="{source}" class="remote-image">' in html


def test_chart_text_is_escaped_for_plotly():
    from kernelbench.sitegen.charts import chart_text

    assert chart_text('<a href="x">y</a>\u200b') == "&lt;a href=&#34;x&#34;&gt;y&lt;/a&gt;\\u200b"


def test_a_code_change_is_told_from_a_data_change(tmp_path: Path):
    """snapshot.code_changed decides whether a build starts its render workers before loading the deck."""
    from kernelbench.sitegen import snapshot

    data, templates, static, package = (tmp_path / name for name in ("data", "templates", "static", "package"))
    for folder in (data / "runs" / "r1", templates, static, package):
        folder.mkdir(parents=True)
    (data / "runs" / "r1" / "check.log").write_text("ok\n")
    (templates / "run.html").write_text("{{ run }}\n")
    roots = ([data / "runs", data / "annotations"], [templates, static, package])
    context = ("version",)
    first = snapshot.take(*roots, context)
    assert not snapshot.code_changed(first, snapshot.take(*roots, context, previous=first), roots)
    (data / "runs" / "r1" / "check.log").write_text("edited\n")
    (data / "runs" / "r2").mkdir()
    data_edited = snapshot.take(*roots, context, previous=first)
    assert not snapshot.code_changed(first, data_edited, roots)
    (templates / "run.html").write_text("{{ run }} edited\n")
    assert snapshot.code_changed(data_edited, snapshot.take(*roots, context, previous=data_edited), roots)
    (package / "new.py").write_text("")
    assert snapshot.code_changed(data_edited, snapshot.take(*roots, context), roots)
    assert snapshot.code_changed(first, snapshot.take(*roots, ("other python",)), roots)


def test_a_record_taken_by_a_forked_process_is_the_one_this_process_takes(tmp_path: Path, monkeypatch):
    """snapshot.take has a forked process record the data roots when the previous record is large: the record is
    the one a single process takes, with the site's files looked for as well; where the child cannot be forked or
    fails, the build records the data itself."""
    import types

    from kernelbench.sitegen import snapshot

    runs = tmp_path / "data" / "runs"
    for i in range(40):
        (runs / f"r{i:02}" / "sub").mkdir(parents=True)
        (runs / f"r{i:02}" / "result.json").write_text("{}" * i)
        (runs / f"r{i:02}" / "sub" / "chunk.log").write_text("x")
    (runs / "r07" / "link").symlink_to(runs / "r08")  # a link: the record cannot vouch for it
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("")
    site = tmp_path / "site"
    (site / "runs" / "r01").mkdir(parents=True)
    (site / "index.html").write_text("")
    (site / "runs" / "r01" / "index.html").write_text("")
    roots = ([runs, tmp_path / "data" / "annotations"], [tmp_path / "code"])
    ran = []
    monkeypatch.setattr(snapshot, "_forkable", lambda: True)  # threads other tests left behind are idle

    def fields(record: snapshot.Snapshot) -> tuple:
        return record.tops, record.folders, record.certain, record.newest_ns, record.site_complete

    def take(share: int, previous: snapshot.Snapshot | None = None, files: list[str] | None = None):
        monkeypatch.setattr(snapshot, "FORKED_RECORD_FOLDERS", share)
        record = snapshot.take(*roots, ("context",), previous=previous, meanwhile=lambda: ran.append(share),
                               site_files=None if files is None else (site, files))
        record.taken_ns = 0
        return record

    alone = take(10**9)
    assert len(alone.folders) == 82 and not alone.certain and alone.site_complete is None
    whole, gone = ["index.html", "runs/r01/index.html"], ["index.html", "runs/r02/index.html"]
    for previous in (None, alone):
        for files in (None, whole, gone):
            expected = fields(take(10**9, previous, files))
            assert expected[4] is (None if files is None else files is whole)
            assert fields(take(1, previous, files)) == expected
    assert ran == [1, 1, 1]  # `meanwhile` runs where a child records the data (a previous record), only there
    (runs / "r07" / "link").unlink()
    expected = fields(take(10**9, alone, whole))
    assert expected[2] and fields(take(4, alone, whole)) == expected
    record = take(4, alone, whole)
    assert snapshot.site_holds(record, site, whole) and not snapshot.site_holds(record, site, list(gone))

    def no_fork():
        raise OSError("no fork here")

    with monkeypatch.context() as patched:
        patched.setattr(snapshot.os, "fork", no_fork)
        assert fields(take(4, alone, whole)) == expected

    def broken(_value):
        raise ValueError("cannot send")

    with monkeypatch.context() as patched:  # the child fails before sending: exits 1, the data recorded here
        patched.setattr(snapshot, "marshal", types.SimpleNamespace(dumps=broken, loads=snapshot.marshal.loads))
        assert fields(take(4, alone, whole)) == expected


@pytest.mark.parametrize("lines", [False, True])
def test_visible_escapes_exactly_the_characters_that_act(lines: bool):
    """Every code point, as `visible` shows it (a translation table filled as characters are met) and as its
    definition says: a control, format or separator character escaped, tabs and line breaks kept with `lines`."""
    import unicodedata

    from kernelbench.text import visible

    def by_definition(char: str) -> str:
        if unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp") or (lines and char in "\t\n"):
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    everything = "".join(map(chr, range(0x110000)))
    assert visible(everything, lines=lines) == "".join(map(by_definition, everything))
    assert visible("plain text", lines=lines) == "plain text"


@pytest.mark.parametrize("text, first, marked", [
    ('{\n  "a": [1, 2.5, true, null],\n  "b": "<&>\\u00e9"\n}\n', 1, []),
    ('{"one line": "no line end"}', 1, [1]),
    ("", 1, []),
    ("\n\n\n", 1, [2]),
    ("\n".join(f'"{n}"' for n in range(120)), 95, [95, 100, 214]),  # the numbers' width grows
    ('{"cut": "off', 7, [7, 8, 9]),
])
def test_the_site_formatter_writes_what_pygments_html_formatter_writes(text: str, first: int, marked: list[int]):
    """The run page's highlighting wraps pygments' formatted lines in one pass (runpage._SiteFormatter): the
    markup is HtmlFormatter's own, for every option the site uses and for a formatter made after others."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import JsonLexer, PythonLexer

    for lexer in (JsonLexer(), PythonLexer()):
        for _ in range(2):
            stock = HtmlFormatter(linenos="inline", lineanchors="result-L", anchorlinenos=True, linenostart=first,
                                  hl_lines=[n - first + 1 for n in marked], cssclass="highlight", wrapcode=True)
            assert highlight_source(text, lexer, "result", marked, first) == highlight(text, lexer, stock)
