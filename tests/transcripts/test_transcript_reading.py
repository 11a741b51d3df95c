"""The builder's own line reader against the general one, and head records decoded on demand."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kernelbench.transcripts import load
from kernelbench.transcripts.builder import SessionBuilder
from kernelbench.transcripts.formats import line_formats
from kernelbench.transcripts.reader import (
    FIRST_READ,
    HEAD_BYTES,
    HeadRecords,
    head_records,
    iter_lines,
    read_head,
)

MESSY = (b"\xef\xbb\xbfstarting agent...\r\n"
         b'{"type": "a", "n": 1}\r\n'
         b"\n   \n"
         b'{"type": "b", "text": "caf\xe9"}\n'          # invalid UTF-8: replaced, kept
         b"[1, 2, 3]\n"                                 # JSON, but not an object
         b'{"type": "c", "broken": \n'                  # not the last line: bad JSON
         b'{"type": "d"}\n'
         b'{"type": "e", "cut": "in the midd')          # the last line, cut off


def _by_iter_lines(path: Path) -> tuple[list, SessionBuilder]:
    builder = SessionBuilder(path, "x")
    out = []
    for line in iter_lines(path):
        record = builder.accept(line)
        if record is not None:
            out.append((line.number, record))
    return out, builder


@pytest.mark.parametrize("tail", [b"", b"\n", b"\n\n  \n"])
def test_builder_lines_read_like_iter_lines_and_accept(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "messy.jsonl"
    path.write_bytes(MESSY + tail)
    expected, reference = _by_iter_lines(path)
    builder = SessionBuilder(path, "x")
    got = list(builder.lines(path))
    assert got == expected
    assert [n for n, _ in got] == [2, 5, 8]
    assert builder.records == reference.records == 7
    assert builder.session.issue_counts == reference.session.issue_counts
    assert builder.session.unknown_records == reference.session.unknown_records
    assert [(e.line, e.record_type, e.raw) for e in builder.session.events] == \
        [(e.line, e.record_type, e.raw) for e in reference.session.events]
    # the banner and the broken line are bad JSON; the cut last line is reported as such only when it is last
    cut = {"truncated_last_line": 1} if not tail else {}
    assert builder.session.issue_counts == {"invalid_utf8": 1, "bad_json": 2 + (not cut), **cut}


def test_head_records_are_decoded_only_as_far_as_asked() -> None:
    lines = [orjson.dumps({"n": i}) for i in range(100)]
    head = b"banner\n" + b"\n".join(lines) + b"\n"
    records = HeadRecords(head, 40)
    assert records[0] == {"n": 0} and len(records.records) == 1
    assert records[:3] == [{"n": 0}, {"n": 1}, {"n": 2}] and len(records.records) == 3
    assert [r["n"] for r in records][:2] == [0, 1] and len(records) == 40 and records[-1] == {"n": 39}
    assert not HeadRecords(b"not json\n", 40) and HeadRecords(b'{"a": 1}', 40)


def test_a_full_head_leaves_out_its_cut_last_line() -> None:
    line = orjson.dumps({"pad": "x" * 1000}) + b"\n"
    head = line * (HEAD_BYTES // len(line)) + b'{"cut": "he'
    head = head[:HEAD_BYTES] if len(head) >= HEAD_BYTES else head + b" " * (HEAD_BYTES - len(head))
    records = HeadRecords(head, 1000)
    assert all("pad" in r for r in records) and len(records) == HEAD_BYTES // len(line)


@pytest.mark.parametrize("pad", [10, 3000, FIRST_READ // 3, FIRST_READ - 40, FIRST_READ + 5, HEAD_BYTES // 2])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_head_read_in_two_steps_gives_the_records_of_the_whole_head(tmp_path: Path, pad: int, bom: bytes) -> None:
    """The head's first part is read alone; records past it come from the whole head, read when asked for, and
    they are the records a whole head read at once gives (lines across the first part's end included)."""
    path = tmp_path / "log.jsonl"
    lines = [b"a banner line", b"", b'{"broken": ']
    lines += [orjson.dumps({"n": i, "pad": "x" * (pad if i % 3 == 0 else 7)}) for i in range(60)]
    path.write_bytes(bom + b"\n".join(lines) + b'\n{"cut": "at the e')
    whole = HeadRecords(read_head(path), 40)
    for limit, asked in ((40, 45), (3, 3), (40, 1)):
        stepped, at_once = head_records(path, limit=limit), HeadRecords(read_head(path), limit)
        assert stepped[:asked] == at_once[:asked] and len(stepped) == len(at_once), (limit, asked)
    assert list(head_records(path)) == list(whole) and [r["n"] for r in whole] == list(range(len(whole)))
    data = path.read_bytes()
    if len(data) > FIRST_READ and data.index(b"\n", data.index(b'{"n":0')) < FIRST_READ:
        first = head_records(path)                  # the first part alone gives the first record
        assert first[0]["n"] == 0 and len(first.head) <= FIRST_READ and first.rest is not None


def test_a_blank_first_part_is_not_an_empty_file(tmp_path: Path) -> None:
    """Blank bytes beyond the head's first part: the rest of the head decides, as a whole head read would."""
    path = tmp_path / "late.jsonl"
    record = {"type": "user", "message": {"role": "user", "content": "hello"}, "sessionId": "s1", "uuid": "u1",
              "timestamp": "2026-01-01T00:00:00Z"}
    path.write_bytes(b" " * (FIRST_READ + 100) + b"\n" + orjson.dumps(record) + b"\n")
    session = load(path)
    assert session.format == "claude-session" and session.session_id == "s1"


@pytest.mark.parametrize(("folder", "expected", "most"), [("codex-rollout", "codex-rollout", 20),
                                                           ("claude-session", "claude-session", 10)])
def test_detection_decodes_only_the_head_records_it_needs(tx: Path, folder: str, expected: str, most: int) -> None:
    """Detectors look at records one by one, so a log is told apart by the records the detectors before its
    own look through (ten for the stream-json one, twenty for the session one), not by the head's forty."""
    for path in sorted((tx / folder).glob("*.jsonl")):
        head = read_head(path)
        records = head_records(path, head=head)
        found = next(m.NAME for m in line_formats() if m.detect(records, head))
        assert found == expected, path.name
        assert len(records.records) <= most, (path.name, len(records.records))


def test_a_claude_session_whose_first_line_outgrows_the_head_is_still_detected(tmp_path: Path) -> None:
    """Records read as whole lines past the head are detected like any other."""
    path = tmp_path / "long.jsonl"
    first = {"type": "user", "message": {"role": "user", "content": "x" * (HEAD_BYTES + 10)},
             "sessionId": "s1", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z"}
    path.write_bytes(orjson.dumps(first) + b"\n")
    session = load(path)
    assert session.format == "claude-session" and session.session_id == "s1"


def test_bytes_already_read_are_parsed_instead_of_the_file(tmp_path: Path):
    """`load(path, data=...)`: the bytes a caller read (and hashed) are parsed, not the file read again; the
    session is the one the same bytes give from disk."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(MESSY)
    from_disk = load(path)
    path.write_bytes(b'{"type": "user", "message": {"content": "written since"}}\n')
    given = load(path, data=MESSY)
    assert given.model_dump() == from_disk.model_dump()
    assert "written since" in str(load(path).model_dump())
