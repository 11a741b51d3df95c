"""Reading JSON Lines the way real agent logs come: banners, BOMs, CRLF, broken bytes, a cut-off last line.

Nothing raises here: every line is yielded either as a parsed record or as a problem the parser records.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

BOM = b"\xef\xbb\xbf"
READ_BUFFER = 1 << 20


@dataclass(slots=True)
class Line:
    number: int            # 1-based
    record: Any            # the parsed JSON value, or None when `problem` is set
    raw: bytes             # the line without its line ending
    problem: str | None = None  # bad_json | truncated_last_line: `record` is None
    repaired: str | None = None  # invalid_utf8: bytes were replaced, `record` is usable
    ended: bool = True     # the line had its line end (a last line without one may have been cut off)


def parse_json_bytes(raw: bytes) -> tuple[Any, str | None]:
    """Parse one JSON text; invalid UTF-8 is replaced rather than rejected, and reported."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        pass
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return orjson.loads(raw.decode("utf-8", "replace")), "invalid_utf8"
        except orjson.JSONDecodeError:
            return None, "bad_json"
    return None, "bad_json"


# A transcript is opened without following a link: the site hands its parser a file's checked name inside a run
# folder held open (kernelbench.inputs.Folder.path_for_reader), and a file swapped for a link after the check must
# not lead it outside the data folder. A user's own path is resolved by the command before it gets here.
OPEN_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW


def open_transcript(path: Path) -> int:
    """A descriptor of the transcript file at `path`, opened without following a link as its last part."""
    return os.open(path, OPEN_FLAGS)


# The bytes of a transcript its caller has already read (`given`): the site reads a run's transcript once, through
# the run folder's descriptor, hashes those bytes and has them parsed, instead of the parser reading the file again.
_GIVEN: ContextVar[tuple[Path, bytes] | None] = ContextVar("given_transcript", default=None)


@contextmanager
def given(path: Path, data: bytes) -> Iterator[None]:
    """While in this block, reading the file at `path` reads `data` instead (every other file is read from
    disk: the logs a parser finds beside it, say)."""
    token = _GIVEN.set((path, data))
    try:
        yield
    finally:
        _GIVEN.reset(token)


def _given(path: Path) -> bytes | None:
    held = _GIVEN.get()
    if held is None or (held[0] is not path and held[0] != path):
        return None
    return held[1]


def open_lines(path: Path) -> BinaryIO:
    """The transcript at `path` as a binary file to iterate by lines (the bytes `given` for it, if any)."""
    data = _given(path)
    if data is not None:
        return io.BytesIO(data)
    # a large buffer: lines of agent logs run to kilobytes, and a line longer than the default 8 KB buffer is
    # read in pieces and joined (measured: a 100 MB log read 3-5x faster with 1 MB)
    return os.fdopen(open_transcript(path), "rb", buffering=READ_BUFFER)


def iter_lines(path: Path) -> Iterator[Line]:
    """Yield every non-blank line of a JSONL file, parsed where possible."""
    with open_lines(path) as handle:
        previous: Line | None = None
        cut_off = False
        for number, chunk in enumerate(handle, start=1):
            if number == 1 and chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
            if chunk.isspace() or not chunk:
                continue
            # JSON allows the trailing "\r\n" as whitespace: no copy of the line is made to strip it
            try:
                line = Line(number, orjson.loads(chunk), chunk)
            except orjson.JSONDecodeError:
                line = _repair(number, chunk.rstrip(b"\r\n"))
            if previous is not None:
                yield previous
            previous = line
            cut_off = not chunk.endswith(b"\n")
        if previous is not None:
            if previous.problem == "bad_json" and cut_off and previous.raw.lstrip()[:1] in (b"{", b"["):
                previous.problem = "truncated_last_line"
            yield previous


def _repair(number: int, raw: bytes) -> Line:
    record, problem = parse_json_bytes(raw)
    if record is not None:
        return Line(number, record, raw, None, problem)
    return Line(number, None, raw, problem)


def repair_line(number: int, chunk: bytes) -> Line:
    """A line (with its line end, if any) that orjson rejected: repaired UTF-8, or the problem."""
    line = _repair(number, chunk.rstrip(b"\r\n"))
    line.ended = chunk.endswith(b"\n")
    return line


HEAD_BYTES = 256 * 1024
FIRST_READ = 64 * 1024      # the head is read in two steps: most logs are told apart within their first lines


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    return _read_start(path, size)[0]


def _read_start(path: Path, size: int) -> tuple[bytes, bool]:
    """The file's first `size` bytes (its BOM left out), and whether the file holds more.

    A plain descriptor, asking for no more than the file holds: a read of `size` allocates that much first and
    then shrinks it, which for a file smaller than the head cost 15-80 µs of page faults (a read sized to the
    file costs 4-13 µs); one byte more than the size found sees a file still growing."""
    data = _given(path)
    if data is not None:
        start = data[:size]
        return start.removeprefix(BOM), len(start) >= size
    fd = open_transcript(path)
    try:
        start = os.read(fd, min(size, os.fstat(fd).st_size + 1))
    finally:
        os.close(fd)
    return start.removeprefix(BOM), len(start) >= size


def head_records(path: Path, limit: int = 40, head: bytes | None = None) -> HeadRecords:
    """The first JSON object records among the file's first lines (banners and broken lines skipped), for
    detection; reads only the head of the file, so a 100 MB log costs the same as a small one. Records are
    decoded as detection asks for them: most formats are told apart by their first record or two. Without a
    `head`, its first FIRST_READ bytes are read, and the rest of it only when the records asked for go further
    (reading the whole head was a tenth of detecting a rollout, whose first lines alone are told apart)."""
    if head is not None:
        return HeadRecords(head, limit)
    start, more = _read_start(path, FIRST_READ)
    return HeadRecords(start, limit, rest=(lambda: read_head(path)) if more else None)


class HeadRecords(Sequence):
    """A list of up to `limit` records from the lines of `head`, each line split off and decoded when an index,
    slice, length or iteration first reaches it. `rest`, where given, reads the whole head (HEAD_BYTES) when the
    lines of the part given run out: the records are then those the whole head would have given at once."""

    def __init__(self, head: bytes, limit: int, rest: Callable[[], bytes] | None = None):
        self.head, self.limit, self.rest = head, limit, rest
        self.records: list[dict] = []
        self.position, self.lines = 0, 0     # where the next line starts; lines looked at (limit * 3 at most)
        self.end = self._end()
        self.exhausted = False               # no line left to look at

    def _end(self) -> int:
        # a head that fills the read, or the first part of one, may end inside a line: that line is left out
        cut = len(self.head) >= HEAD_BYTES or self.rest is not None
        return self.head.rfind(b"\n") + 1 if cut else len(self.head)

    def whole(self) -> bytes:
        """The whole head (read now, if only its first part was)."""
        if self.rest is not None:
            self.head, self.rest = self.rest(), None
            self.end = self._end()
        return self.head

    def _fill(self, count: float) -> None:
        records = self.records
        want = min(count, self.limit)
        if len(records) >= want or self.exhausted:     # the usual call: the records asked for are there
            return
        while len(records) < want and self.lines < self.limit * 3:
            if self.position >= self.end:
                if self.rest is None:
                    break
                self.whole()
                continue
            head = self.head
            cut = head.find(b"\n", self.position, self.end)
            cut = self.end if cut < 0 else cut
            raw = head[self.position:cut].strip()
            self.position, self.lines = cut + 1, self.lines + 1
            if raw[:1] == b"{":
                record, _ = parse_json_bytes(raw)
                if isinstance(record, dict):
                    records.append(record)
        self.exhausted = self.lines >= self.limit * 3 or (self.position >= self.end and self.rest is None)

    def __getitem__(self, index):
        if isinstance(index, slice):
            plain = index.step is None and (index.start or 0) >= 0 and index.stop is not None and index.stop >= 0
            self._fill(index.stop if plain else float("inf"))
        else:
            self._fill(index + 1 if index >= 0 else float("inf"))
        return self.records[index]

    def __len__(self) -> int:
        self._fill(float("inf"))
        return len(self.records)

    def __bool__(self) -> bool:
        self._fill(1)
        return bool(self.records)

    def __iter__(self):
        # every detector walks the records from the first: the ones decoded already are handed over as they are
        records, index = self.records, 0
        while True:
            if index >= len(records):
                self._fill(index + 1)
                if index >= len(records):
                    return
            yield records[index]
            index += 1


def first_records(path: Path, limit: int = 10) -> list[dict]:
    """Like `head_records` but reading whole lines, for logs whose first lines are longer than the head."""
    records: list[dict] = []
    for line in iter_lines(path):
        if isinstance(line.record, dict):
            records.append(line.record)
        if len(records) >= limit or line.number >= 200:
            break
    return records


def load_document(path: Path) -> tuple[Any, str | None]:
    """The whole file as one JSON document (opencode export, Gemini session JSON)."""
    data = _given(path)
    if data is None:
        with os.fdopen(open_transcript(path), "rb") as handle:
            data = handle.read()
    data = data.removeprefix(BOM)
    return parse_json_bytes(data)
