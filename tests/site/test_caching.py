"""What a build keeps for the next one (parsed inputs, viewer first screens, file hashes) never yields a stale page."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kernelbench.results.dataset import ParseCache, load_dataset
from kernelbench.sitegen.buildcache import WarmState, parse_cache_path, viewer_cache_file
from kernelbench.sitegen.manifest import FileHasher
from kernelbench.sitegen.pipeline import build_site


def _same_size_edit(path: Path, old: str, new: str) -> None:
    """Rewrite a file with different bytes of the same length and put its mtime back, to the nanosecond."""
    assert len(old) == len(new)
    st = path.stat()
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def _first_annotation(deck: Path) -> Path:
    return sorted((deck / "annotations").glob("*.yaml"))[0]


def test_parse_cache_reuses_unchanged_files_and_reparses_changed_bytes(deck: Path):
    cache = ParseCache()
    first = load_dataset(deck, cache=cache)
    assert cache.misses > 0 and cache.hits == 0
    again = load_dataset(deck, cache=cache)
    assert cache.misses == 0 and cache.hits > 0
    run_id = sorted(first.runs)[0]
    assert again.runs[run_id].result is first.runs[run_id].result  # reused, not parsed again
    path = _first_annotation(deck)
    _same_size_edit(path, "Upcasts to fp32", "Upcasts to FP32")
    edited = load_dataset(deck, cache=cache)
    assert cache.misses == 1
    assert "Upcasts to FP32" in edited.annotations[path.stem].annotation.summary


def test_parse_cache_drops_deleted_files(deck: Path):
    cache = ParseCache()
    load_dataset(deck, cache=cache)
    path = _first_annotation(deck)
    path.unlink()
    load_dataset(deck, cache=cache)
    load_dataset(deck, cache=cache)
    assert not any(key[0] == str(path) for key in cache.entries)


def test_cold_rebuild_sees_an_annotation_edit_that_keeps_size_and_mtime(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    assert parse_cache_path(out).is_file()
    path = _first_annotation(deck)
    _same_size_edit(path, "Upcasts to fp32", "Upcasts to FP32")
    report = build_site(config_for(deck, out))
    assert report.rendered >= 1
    assert "Upcasts to FP32" in (out / "runs" / path.stem / "index.html").read_text()


def test_warm_rebuild_sees_an_annotation_edit_that_keeps_size_and_mtime(config_for, deck: Path, tmp_path: Path):
    out, warm = tmp_path / "site", WarmState()
    build_site(config_for(deck, out), warm)
    path = _first_annotation(deck)
    _same_size_edit(path, "Upcasts to fp32", "Upcasts to FP32")
    report = build_site(config_for(deck, out), warm)
    assert warm.parse_cache.misses == 1 and report.rendered >= 1
    assert "Upcasts to FP32" in (out / "runs" / path.stem / "index.html").read_text()


def test_unreadable_or_foreign_parse_cache_is_ignored(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    parse_cache_path(out).write_bytes(b"not a pickle")
    path = _first_annotation(deck)
    path.write_text(path.read_text().replace("Upcasts to fp32", "Upcasts (cache broken)"))
    build_site(config_for(deck, out))
    assert "Upcasts (cache broken)" in (out / "runs" / path.stem / "index.html").read_text()


def test_annotation_edit_reuses_the_transcript_viewer_output(config_for, deck: Path, tmp_path: Path, monkeypatch):
    from kernelbench.sitegen import runpage

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    path = _first_annotation(deck)
    page = out / "runs" / path.stem / "index.html"
    before = page.read_text()
    assert viewer_cache_file(out, path.stem).is_file()
    chunks = sorted(p.name for p in page.parent.iterdir())

    def no_viewer(*args, **kwargs):
        raise AssertionError("the transcript did not change: the viewer must not run again")

    monkeypatch.setattr(runpage, "transcript_viewer_html", no_viewer)
    path.write_text(path.read_text().replace("Upcasts to fp32", "Upcasts (edited)"))
    build_site(config_for(deck, out))
    after = page.read_text()
    assert "Upcasts (edited)" in after
    start = before.index('id="transcript"') if 'id="transcript"' in before else 0
    assert before[start:start + 2000] == after[start:start + 2000]  # the same transcript tab
    assert sorted(p.name for p in page.parent.iterdir()) == chunks


def test_transcript_edit_renders_the_viewer_afresh(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    run_dir = sorted((deck / "runs").iterdir())[0]
    key_before = viewer_cache_file(out, run_dir.name).read_bytes()
    transcript = run_dir / "transcript.jsonl"
    lines = transcript.read_text().splitlines(keepends=True)
    transcript.write_text("".join(lines[: max(1, len(lines) // 2)]))
    time.sleep(0.01)
    report = build_site(config_for(deck, out))
    assert report.rendered >= 1
    assert viewer_cache_file(out, run_dir.name).read_bytes() != key_before


def test_file_hasher_rehashes_racily_clean_files(tmp_path: Path):
    """A file modified after (or just before) the previous build began is hashed again even if its size and
    mtime match the cached signature: a same-size rewrite within one timestamp tick is caught."""
    path = tmp_path / "f.txt"
    path.write_text("one")
    first = FileHasher()
    digest = first(path)
    _same_size_edit(path, "one", "two")
    assert FileHasher(first.seen, trusted_before_ns=first.started_ns)(path) != digest
    old = time.time_ns() - 3_600 * 10**9
    os.utime(path, ns=(old, old))
    signed = FileHasher()
    signed(path)
    trusting = FileHasher(signed.seen, trusted_before_ns=time.time_ns())
    assert trusting(path) == signed.seen[str(path)][-1]


def test_a_file_read_once_is_hashed_under_its_status_before_the_read(tmp_path: Path, monkeypatch):
    """`FileHasher.read` (a run's transcript, read once for its hash and its parser) hands back the very bytes it
    hashed, and records the status taken on the open file before the read: a write that lands between that
    status and the read leaves the record with a signature the file no longer has, so the next build hashes the
    file again, as for any file hashed."""
    from kernelbench.sitegen import manifest

    path = tmp_path / "transcript.jsonl"
    path.write_bytes(b"one\n")
    real_fstat = os.fstat

    def fstat_then_write(fd):
        status = real_fstat(fd)
        with open(path, "ab") as handle:  # the writer wins between the status and the read
            handle.write(b"two\n")
        return status

    monkeypatch.setattr(manifest.os, "fstat", fstat_then_write)
    first = FileHasher()
    digest, data = first.read(path, lambda: (os.open(path, os.O_RDONLY), path), 1 << 20)
    monkeypatch.undo()
    assert data == b"one\ntwo\n" and digest == manifest.hash_file(path)
    assert first.seen[str(path)][0] == 4  # the size before the write
    monkeypatch.setattr(manifest, "hash_fd", lambda fd: "hashed again")
    assert FileHasher(first.seen, trusted_before_ns=time.time_ns() + 10**12)(
        path, lambda: (os.open(path, os.O_RDONLY), path)) == "hashed again"


def test_a_file_read_once_hands_back_no_bytes_it_did_not_hash_whole(tmp_path: Path):
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(b"x" * 100)
    opener = lambda: (os.open(path, os.O_RDONLY), path)
    whole = FileHasher().read(path, opener, 100)
    assert whole[1] == b"x" * 100
    over = FileHasher().read(path, opener, 99)  # larger than the caller takes: hashed, not handed back
    assert over == (whole[0], None)
    hasher = FileHasher()
    hasher(path)
    assert hasher.read(path, opener, 100) == (whole[0], None)  # hashed already: not read again
    assert FileHasher().read(tmp_path / "missing", lambda: None, 100) == (None, None)


def test_cold_rebuild_sees_a_template_edit_that_keeps_size_and_mtime(config_for, deck: Path, tmp_path: Path):
    """Compiled templates are kept between commands; jinja checks each against its source's hash."""
    import shutil

    from kernelbench.sitegen.pipeline import REPO

    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    out = tmp_path / "site"
    build_site(config_for(deck, out, templates_dir=templates))
    assert any((out / ".kernelbench-cache" / "jinja").iterdir())
    base = templates / "base.html"
    text = base.read_text()
    marker = next(word for word in ("<footer", "<main", "<body") if word in text)
    _same_size_edit(base, marker, marker.upper())
    build_site(config_for(deck, out, templates_dir=templates))
    assert marker.upper() in (out / "index.html").read_text()
