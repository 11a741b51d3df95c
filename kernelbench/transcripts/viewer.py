"""The transcript viewer: the first screen as HTML, the rest as chunk files the page loads while the reader scrolls.

`write_viewer(session, out_dir, asset_prefix=..., budget_s=...)` writes into `out_dir`
    c-0001.js, c-0002.js ...  `KBT.chunk(n, [[view, ...], ...])`: later events as views (render.py), JSON data
                              that the page turns into elements, inserting every text as text
    b-0001.js ...             `KBT.blobs(n, {"<key>": "<text>"})`: the rest of bodies cut to a preview
and returns the first screen's HTML (markup.py). Chunk and blob files are scripts that call a registration
function, so the page loads them with a script tag, which works over http and from file:// alike (fetch() does
not on file://). Their payload is data only.

The page that embeds the HTML must also load `transcript.css` and `transcript.js` (from `asset_prefix`).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import orjson

from kernelbench.transcripts.gcpause import gc_paused
from kernelbench.transcripts.loader import as_path
from kernelbench.transcripts.markup import items_html
from kernelbench.transcripts.model import (
    TOOL_RESULT,
    USER,
    Event,
    Kind,
    Session,
    Usage,
    all_events,
    usages_of,
)
from kernelbench.transcripts.render import (
    RENDERERS,
    RenderContext,
    View,
    esc,
    event_view,
    fmt_duration,
    fmt_tokens,
    subagent_view,
    usage_title,
)
from kernelbench.transcripts.timeline import timeline_html

VIEWER_VERSION = 1
# markup of events in the page itself: a few screens of collapsed events; the page asks for the first chunk as
# soon as the reader nears the end of it
FIRST_SCREEN_BYTES = 32_000
CHUNK_BYTES = 200_000          # views (JSON) per chunk file: what the page builds in one go
PACK_BYTES = 1 << 20           # texts per blob file
CHUNK_FILE = re.compile(r"^(c|b)-\d{4,}\.js$")


def write_viewer(session: Session, out_dir: Path, *, asset_prefix: str, budget_s: float | None = None,
                 chunk_prefix: str | None = None) -> str:
    """Write the chunk and blob files into `out_dir` and return the first screen's HTML.

    `chunk_prefix` is the URL of `out_dir` relative to the page; by default the page sits in out_dir's parent
    (the run page `runs/<id>/index.html` with `out_dir = runs/<id>/transcript`). `asset_prefix` is where
    transcript.css/js are served from, relative to the page (recorded on the root element for standalone use).
    """
    with gc_paused():
        return _write_viewer(session, as_path(out_dir), asset_prefix, budget_s, chunk_prefix)


def _write_viewer(session: Session, out_dir: Path, asset_prefix: str, budget_s: float | None,
                  chunk_prefix: str | None) -> str:
    earlier = _chunk_files(out_dir)
    prefix = chunk_prefix if chunk_prefix is not None else f"{out_dir.name}/"
    blobs = _BlobWriter(out_dir)
    ctx = RenderContext(results=_results(session), cwd=session.cwd, write_blob=blobs.write)
    counts: dict[str, int] = {"events": 0}        # the whole session's, summed from its turns
    try:
        first, ranges = _write_chunks(_pieces(session, ctx, counts), out_dir)
    finally:
        blobs.close()
    _remove_stale(out_dir, earlier, len(ranges) - 1, blobs.number - 1)
    total = counts["events"]
    index = {"v": VIEWER_VERSION, "prefix": prefix, "chunks": ranges, "events": total}
    return "".join([
        f'<div class="kbt" data-assets="{esc(asset_prefix)}">',
        _header(session, counts), _banners(session), timeline_html(session, budget_s), _toolbar(),
        f'<div class="kbt-events">{first}</div>',
        _sentinel(ranges, total),
        f'<script type="application/json" class="kbt-index">{_json_for_html(index)}</script>',
        "</div>",
    ])


# ---------------------------------------------------------------------------------------------- chunks

Piece = tuple[list[View], int, int]    # an event's view (after its turn's header where one starts), first/last id


def _write_chunks(pieces: Iterator[Piece], out_dir: Path) -> tuple[str, list[list[int]]]:
    """The first screen's markup, and [first_id, last_id] of every chunk (the first screen is chunk 0).

    The first screen is HTML; every later chunk is a script file holding its views as JSON, which the page turns
    into elements when the chunk is needed (no escaping and no markup to build here for most of a transcript).
    A chunk's array holds one array of items per piece, written to the file as each piece is dumped."""
    ranges: list[list[int]] = []
    html: list[str] = []
    size = 0
    for items, first_id, last_id in pieces:
        html.append(items_html(items))
        size += len(html[-1])
        if not ranges:
            ranges.append([first_id, last_id])
        ranges[0][1] = last_id
        if size >= FIRST_SCREEN_BYTES:
            break
    chunk: _ScriptFile | None = None
    try:
        for items, first_id, last_id in pieces:       # what the first screen left
            if chunk is None:
                number = len(ranges)
                chunk = _ScriptFile(out_dir / f"c-{number:04d}.js", b"KBT.chunk(%d,[" % number, b"]);\n")
                ranges.append([first_id, last_id])
            chunk.add_json(items)
            ranges[-1][1] = last_id
            if chunk.size >= CHUNK_BYTES:
                chunk.close()
                chunk = None
    finally:
        if chunk is not None:
            chunk.close()
    return "".join(html), ranges


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    return value


class _ScriptFile:
    """A chunk or blob file written as its parts arrive: `head` part,part,... `tail`. Parts are gathered in one
    buffer and written in batches of about WRITE_BYTES: one write per part costs more than the copy into the
    buffer, and one copy of a whole megabyte file is a buffer the system gives back and faults in again each
    time. A chunk's views are encoded by msgspec straight into that buffer (`add_json`): no bytes object per
    piece (encoding each piece apart with orjson cost more in its calls and copies than in the encoding). The
    file is a plain descriptor: Python's buffered file added a dozen system calls per file (fstat, isatty, a
    seek around every call) to what are a few large writes."""

    def __init__(self, path: Path, head: bytes, tail: bytes):
        self.fd = _open_for_rewrite(path)
        self.buffer = bytearray(head)
        self.tail = tail
        self.size = 0                       # bytes of parts added
        self.written = 0                    # bytes in the file
        self.first = True

    def add(self, *parts: bytes) -> None:
        buffer = self.buffer
        if self.first:
            self.first = False
        else:
            buffer += b","
        for part in parts:
            buffer += part
            self.size += len(part)
        if len(buffer) >= WRITE_BYTES:
            self._flush()

    def add_json(self, value: Any) -> None:
        """`add(orjson.dumps(value))`, the same bytes (the views hold texts, whole numbers, None, lists and
        mappings of text keys, which both encode alike), without the bytes object in between."""
        buffer = self.buffer
        if self.first:
            self.first = False
        else:
            buffer += b","
        start = len(buffer)
        try:
            _encode_into(value, buffer, -1)
        except (TypeError, UnicodeEncodeError):    # lone surrogates: keep what can be kept
            del buffer[start:]
            _encode_into(_without_surrogates(value), buffer, -1)
        self.size += len(buffer) - start
        if len(buffer) >= WRITE_BYTES:
            self._flush()

    def _flush(self) -> None:
        buffer = self.buffer
        _write_all(self.fd, buffer)
        self.written += len(buffer)
        buffer.clear()

    def close(self) -> None:
        self.buffer += self.tail
        try:
            self._flush()
            os.ftruncate(self.fd, self.written)   # what an earlier, longer file of this name had beyond this one
        finally:
            os.close(self.fd)


WRITE_BYTES = 64 * 1024
_encode_into = msgspec.json.Encoder().encode_into


def _open_for_rewrite(path: Path) -> int:
    """A descriptor writing the file from its start; an existing one is overwritten in place (no O_TRUNC) and
    cut to length on close. A rebuild rewrites the same chunk files, and overwriting reuses their blocks where
    truncating or removing them first frees every block and allocates it again (measured on this machine's ext4:
    45 µs of CPU per 200 KB file against 140-230 µs, and a tenth of the wall time)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)   # closed by _ScriptFile.close


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)                 # (released on return: the buffer is cleared after)
    while view:                             # a write to a regular file may still be cut short (a signal)
        view = view[os.write(fd, view):]


class _BlobWriter:
    """Texts of cut bodies, packed into files of about PACK_BYTES (`KBT.blobs(n, {key: text})`): one file per
    body would cost more in file creation than in writing. A blob holds what follows the preview (the page has
    the preview already)."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.pack: _ScriptFile | None = None
        self.number = 1

    def write(self, key: str, text: str) -> str:
        if self.pack is None:
            self.pack = _ScriptFile(self.out_dir / f"b-{self.number:04d}.js", b"KBT.blobs(%d,{" % self.number,
                                    b"});\n")
        safe = key if _SAFE_KEY.match(key) else re.sub(r"[^A-Za-z0-9_-]", "_", key)
        self.pack.add(b'"%s":' % safe.encode(), _js_string(text))
        reference = f"{self.number}:{safe}"
        if self.pack.size >= PACK_BYTES:
            self.close()
        return reference

    def close(self) -> None:
        if self.pack is not None:
            self.pack.close()
            self.pack, self.number = None, self.number + 1


_SAFE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


def _js_string(text: str) -> bytes:
    try:
        return orjson.dumps(text)
    except TypeError:                      # lone surrogates: keep what can be kept
        return orjson.dumps(text.encode("utf-8", "replace").decode("utf-8"))


def _json_for_html(value: object) -> str:
    return orjson.dumps(value).decode().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _chunk_files(out_dir: Path) -> set[str]:
    """Names of the chunk and blob files an earlier write left in `out_dir`, which is made if missing (listed
    first: a rebuild finds it there, and checking first was a system call more per transcript)."""
    try:
        with os.scandir(out_dir) as entries:
            return {entry.name for entry in entries if CHUNK_FILE.match(entry.name) and entry.is_file()}
    except FileNotFoundError:
        out_dir.mkdir(parents=True, exist_ok=True)
        return set()


def _remove_stale(out_dir: Path, earlier: set[str], chunks: int, blobs: int) -> None:
    """Remove the files of an earlier write that this one did not write again (files of the same name were
    overwritten in place, see `_open_for_rewrite`)."""
    written = {f"c-{n:04d}.js" for n in range(1, chunks + 1)} | {f"b-{n:04d}.js" for n in range(1, blobs + 1)}
    for name in earlier - written:
        (out_dir / name).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------- events and turns

def _results(session: Session) -> dict[str, Event]:
    return {e.call_id: e for e in session.walk() if e.kind is TOOL_RESULT and e.call_id}


def _pieces(session: Session, ctx: RenderContext, session_counts: dict[str, int]) -> Iterator[Piece]:
    events = session.events
    turns = _turn_starts(events)
    renderers, subagent = RENDERERS, Kind.SUBAGENT
    number = 0
    for index, event in enumerate(events):
        kind = event.kind
        view = _view(event, ctx) if kind is subagent else renderers[kind](event, ctx)
        last_id = event.id if event.events is None else _last_id(event)
        if index in turns:
            number += 1
            turn = events[index:turns[index]]
            usage, counts = _totals(turn)
            for name, count in counts.items():
                session_counts[name] = session_counts.get(name, 0) + count
            yield [_turn_header(number, turn, usage, counts), view], event.id, last_id
        else:
            yield [view], event.id, last_id


def _turn_starts(events: list[Event]) -> dict[int, int]:
    """Index of each turn's first event → index after its last. A turn starts at each user prompt."""
    # consecutive prompts (an IDE selection, then the question) open one turn together
    starts = [i for i, e in enumerate(events) if e.kind is USER and (i == 0 or events[i - 1].kind is not USER)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return {start: end for start, end in zip(starts, starts[1:] + [len(events)])} if events else {}


def _turn_header(number: int, events: list[Event], usage: Usage, counts: dict[str, int]) -> View:
    times = [e.ts for e in events if e.ts is not None]
    parts: list = [f"{counts['events']} events", f"{counts.get('tool_call', 0)} tool calls"]
    if not usage.is_zero():
        parts.append(["", f"{fmt_tokens(usage.total)} tokens", usage_title(usage)])
    if len(times) > 1:
        parts.append(fmt_duration(max(times) - min(times)))
    return {"T": number, "s": parts}


def _totals(events: list[Event]) -> tuple[Usage, dict[str, int]]:
    """The tokens of `events` (subagents' included) and their count, in all ("events") and by kind's text;
    counted in bulk (a Counter, sums in C), not by Python work per event: each turn's events are counted for its
    header, so a session's all are."""
    every = all_events(events)
    counts = {"events": len(every)}
    for kind, count in Counter(map(_KIND_OF, every)).items():
        counts[kind._value_] = count            # the plain string: Enum.value is a descriptor call
    return Usage.sum_of(usages_of(every)), counts


_KIND_OF = attrgetter("kind")


def _view(event: Event, ctx: RenderContext) -> View:
    if event.kind is Kind.SUBAGENT:
        children = [_view(child, ctx) for child in event.events or []]
        usage, counts = _totals(event.events or [])
        return subagent_view(event, children, counts, usage)
    return event_view(event, ctx)


def _last_id(event: Event) -> int:
    while event.events:
        event = event.events[-1]
    return event.id


# ---------------------------------------------------------------------------------------------- page parts

def _header(session: Session, counts: dict[str, int]) -> str:
    tokens = session.tokens
    cost = "—" if session.cost_usd is None else f"${session.cost_usd:,.2f}" + (
        ' <span class="kbt-b warn" title="{}">estimate</span>'.format(esc(session.cost_note or ""))
        if session.cost_is_estimate else "")
    facts = [
        ("format", f"{session.format} {session.format_version or ''}".strip()),
        ("model", ", ".join(session.models) or "—"),
        ("duration", fmt_duration(session.duration_s) if session.duration_s is not None else "—"),
        ("events", (f"{counts['events']:,} ({counts.get('tool_call', 0):,} tool calls, "
                    f"{counts.get('file_edit', 0):,} edits)")),
    ]
    rows = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    rows += (f'<div><dt>tokens</dt><dd title="{esc(usage_title(tokens))}">{fmt_tokens(tokens.total)} '
             f'(in {fmt_tokens(tokens.input)}, out {fmt_tokens(tokens.output)}, cache read '
             f'{fmt_tokens(tokens.cache_read)}, cache write {fmt_tokens(tokens.cache_write)})</dd></div>')
    rows += f"<div><dt>cost</dt><dd>{cost}</dd></div>"
    unknown = sum(session.unknown_records.values())
    if unknown:
        detail = ", ".join(f"{k} {v}" for k, v in sorted(session.unknown_records.items()))
        rows += f'<div><dt>not understood</dt><dd title="{esc(detail)}">{unknown} records</dd></div>'
    return f'<dl class="kbt-head">{rows}</dl>'


def _banners(session: Session) -> str:
    out = []
    if not session.complete:
        out.append('<div class="kbt-banner" role="alert"><strong>Incomplete session.</strong> The log ends '
                   'before the agent finished (no final answer or end record): it was cut off, aborted or is '
                   'still running. Everything recorded is shown.</div>')
    if session.issue_counts:
        detail = ", ".join(f"{k.replace('_', ' ')} ×{v}" for k, v in sorted(session.issue_counts.items()))
        out.append(f'<div class="kbt-banner warn">Parsed around problems in the file: {esc(detail)}.</div>')
    return "".join(out)


def _toolbar() -> str:
    return TOOLBAR


def _toolbar_html() -> str:
    filters = "".join(f'<button type="button" data-filter="{key}" aria-pressed="{str(key == "all").lower()}">'
                      f'{label}</button>' for key, label in (("all", "all"), ("tools", "tool calls"),
                                                             ("errors", "errors"), ("edits", "edits"),
                                                             ("thinking", "thinking")))
    return ('<div class="kbt-bar" role="toolbar">'
            '<input type="search" class="kbt-q" placeholder="search the transcript" aria-label="search">'
            '<button type="button" class="kbt-prev" title="previous match (Shift+Enter)">↑</button>'
            '<button type="button" class="kbt-next" title="next match (Enter)">↓</button>'
            '<span class="kbt-count" aria-live="polite"></span>'
            f'<span class="kbt-filters">{filters}</span>'
            '<button type="button" class="kbt-expand">expand all</button>'
            '<button type="button" class="kbt-collapse">collapse all</button></div>')


TOOLBAR = _toolbar_html()       # the same markup on every page: built once


def _sentinel(ranges: list[list[int]], total: int) -> str:
    if len(ranges) <= 1:
        return '<div class="kbt-sentinel" data-done="1"></div>'
    left = total - ranges[0][1]
    return (f'<div class="kbt-sentinel"><button type="button" class="kbt-load">load more ({left:,} events '
            f'left)</button> <button type="button" class="kbt-load-all">load all</button></div>')


# ---------------------------------------------------------------------------------------------- standalone page

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="stylesheet" href="transcript.css"></head>
<body style="max-width:1100px;margin:1rem auto;padding:0 1rem">
<h1 style="font:600 18px system-ui">{title}</h1>
{viewer}
<script src="transcript.js"></script></body></html>
"""


def write_page(session: Session, out_dir: Path, *, budget_s: float | None = None) -> Path:
    """A self-contained viewer page (`index.html`, assets and chunks) in `out_dir`, for `transcript html`."""
    from kernelbench.fileio import atomic_write_text

    out_dir = Path(out_dir)
    html = write_viewer(session, out_dir / "transcript", asset_prefix="", budget_s=budget_s)
    for name in ("transcript.css", "transcript.js"):
        (out_dir / name).write_bytes((STATIC_DIR / name).read_bytes())
    title = f"Transcript · {Path(session.source).name if session.source else session.session_id or ''}"
    page = out_dir / "index.html"
    atomic_write_text(page, PAGE.format(title=esc(title), viewer=html))
    page.chmod(0o644)
    return page
