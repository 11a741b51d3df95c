"""Where the wall-clock went: the time between consecutive events, classed by what the session was waiting for."""

from __future__ import annotations

from operator import attrgetter

from kernelbench.transcripts.model import Event, Kind, Session
from kernelbench.transcripts.render import esc, fmt_duration, one_line

MAX_SEGMENTS = 120             # bars on the axis (runs of tiny steps are merged): several pixels each
CLASSES = {"model": "model", "tool": "tools", "user": "waiting for the user", "sub": "subagents", "other": "other"}
SEGMENT_CLASS = {Kind.TOOL_RESULT: "tool", Kind.USER: "user", Kind.SUBAGENT: "sub", Kind.ASSISTANT: "model",
                 Kind.THINKING: "model", Kind.TOOL_CALL: "model", Kind.FILE_EDIT: "model"}

# A segment is (start, end, class, event id, event): the gap before the event, spent on what the event shows. A
# merged run of segments has its label (a str) in place of the event. Tuples, not objects: a long log has a
# segment per event, and labels are written only for the few hundred the axis shows.
Segment = tuple[float, float, str, int, "Event | str"]


def segments(session: Session) -> list[Segment]:
    timed = sorted((e for e in session.events if e.ts is not None), key=attrgetter("ts"))
    classes = SEGMENT_CLASS
    out: list[Segment] = []
    before = timed[0].ts if timed else 0.0
    for event in timed:
        ts = event.ts
        assert ts is not None and before is not None  # `timed` holds the events with a time only
        if ts > before:
            out.append((before, ts, classes.get(event.kind, "other"), event.id, event))
        before = ts
    return out


# kinds whose label depends on the kind and the event's name only (others quote the event's text)
NAMED_LABELS = frozenset({Kind.TOOL_RESULT, Kind.USER, Kind.SUBAGENT, Kind.ASSISTANT, Kind.THINKING, Kind.TOOL_CALL,
                          Kind.FILE_EDIT})


def label(segment: Segment, cache: dict | None = None) -> str:
    """The segment's label, escaped for an attribute (merged runs have constant labels). With `cache`, a label
    made of the kind and a name is built once per axis (an axis repeats a few of them on a hundred bars)."""
    note = segment[4]
    if isinstance(note, str):
        return note
    if cache is None or note.kind not in NAMED_LABELS:
        return esc(_label(note))
    key = (note.kind, note.name)
    text = cache.get(key)
    if text is None:
        text = cache[key] = esc(_label(note))
    return text


def _label(event: Event) -> str:
    if event.kind is Kind.TOOL_RESULT:
        return f"{event.name or 'tool'} ran"
    if event.kind is Kind.USER:
        return "waiting for the user"
    if event.kind is Kind.SUBAGENT:
        return f"subagent {event.name or ''}"
    if event.kind in (Kind.ASSISTANT, Kind.THINKING, Kind.TOOL_CALL, Kind.FILE_EDIT):
        return "model generating" + (f" ({event.name})" if event.kind is Kind.TOOL_CALL else "")
    return one_line(event.text or event.kind.value, 60)


def merge_small(segs: list[Segment], total: float) -> list[Segment]:
    """Keep the DOM small: runs of tiny segments become one, classed by what took most of their time."""
    if len(segs) <= MAX_SEGMENTS:
        return segs
    threshold = total / MAX_SEGMENTS
    out: list[Segment] = []
    group: list[Segment] = []
    for seg in segs:
        if seg[1] - seg[0] >= threshold:
            if group:
                out.append(_group(group))
                group = []
            out.append(seg)
            continue
        group.append(seg)
        if seg[1] - group[0][0] >= threshold:
            out.append(_group(group))
            group = []
    if group:
        out.append(_group(group))
    return out


def _group(group: list[Segment]) -> Segment:
    weights: dict[str, float] = {}
    for start, end, cls, _, _ in group:
        weights[cls] = weights.get(cls, 0.0) + (end - start)
    cls = max(weights, key=weights.__getitem__)
    return (group[0][0], group[-1][1], cls, group[0][3], f"{len(group)} steps, mostly {CLASSES[cls]}")


def timeline_html(session: Session, budget_s: float | None) -> str:
    segs = segments(session)
    if not segs:
        return '<div class="kbt-time"><p class="kbt-muted">No timestamps in this log: no time axis.</p></div>'
    start, end = segs[0][0], segs[-1][1]
    used = end - start
    span = max(used, budget_s or 0.0) or 1.0
    scale = 100 / span
    bars = []
    labels: dict = {}
    for seg in merge_small(segs, span):
        seg_start, seg_end, cls, ident, _ = seg
        width = seg_end - seg_start
        bars.append(f'<a class="seg seg-{cls}" href="#e-{ident}" style="left:{(seg_start - start) * scale:.3f}%;'
                    f'width:{max(width * scale, 0.05):.3f}%" title="{label(seg, labels)} · {fmt_duration(width)}">'
                    f'</a>')
    marks = f'<span class="kbt-mark end" style="left:{used * scale:.3f}%" title="session ended"></span>'
    if budget_s:
        marks += '<span class="kbt-mark budget" style="left:100%" title="budget"></span>'
    return (f'<div class="kbt-time"><div class="kbt-axis">{"".join(bars)}{marks}</div>'
            f'<div class="kbt-axis-legend">{_legend(segs, used, budget_s)}</div>{_longest(segs, labels)}</div>')


def _length(segment: Segment) -> float:
    return segment[1] - segment[0]


def _legend(segs: list[Segment], used: float, budget_s: float | None) -> str:
    totals: dict[str, float] = {}
    for start, end, cls, _, _ in segs:
        totals[cls] = totals.get(cls, 0.0) + (end - start)
    parts = [f'<span class="kbt-key seg-{cls}"></span>{esc(CLASSES[cls])} {fmt_duration(t)} '
             f'({t / used * 100:.0f}%)' for cls, t in sorted(totals.items(), key=lambda kv: -kv[1])]
    head = f"wall clock {fmt_duration(used)}"
    if budget_s:
        head += f" of a {fmt_duration(budget_s)} budget ({used / budget_s * 100:.0f}%)"
    return f"<strong>{head}</strong> · " + " · ".join(parts)


def _longest(segs: list[Segment], labels: dict) -> str:
    # what heapq.nlargest(5, ..., key) returns (it is documented as this sort), without its Python-level loop
    tools = sorted((s for s in segs if s[2] == "tool" or s[2] == "sub"), key=_length, reverse=True)[:5]
    if not tools:
        return ""
    items = "".join(f'<li><a href="#e-{s[3]}">{label(s, labels)}</a> {fmt_duration(s[1] - s[0])}</li>'
                    for s in tools)
    return f'<details class="kbt-longest"><summary>longest tool calls</summary><ol>{items}</ol></details>'
