"""Where the wall-clock went: the time between consecutive events, classed by what the session was waiting for."""

from __future__ import annotations

from dataclasses import dataclass

from kernelbench.transcripts.model import Event, Kind, Session
from kernelbench.transcripts.render import esc, fmt_duration, one_line

MAX_SEGMENTS = 300
CLASSES = {"model": "model", "tool": "tools", "user": "waiting for the user", "sub": "subagents", "other": "other"}


@dataclass(slots=True)
class Segment:
    start: float
    end: float
    cls: str
    event_id: int
    note: str | Event          # the label, or the event it is made from when only a few segments get shown

    @property
    def width(self) -> float:
        return self.end - self.start

    @property
    def label(self) -> str:
        return self.note if isinstance(self.note, str) else _label(self.note)


SEGMENT_CLASS = {Kind.TOOL_RESULT: "tool", Kind.USER: "user", Kind.SUBAGENT: "sub", Kind.ASSISTANT: "model",
                 Kind.THINKING: "model", Kind.TOOL_CALL: "model", Kind.FILE_EDIT: "model"}


def segments(session: Session) -> list[Segment]:
    timed = [e for e in session.events if e.ts is not None]
    timed.sort(key=lambda e: e.ts)
    out: list[Segment] = []
    for before, after in zip(timed, timed[1:]):
        if after.ts > before.ts:
            # labels are written for the few hundred segments the axis shows, not for every event
            out.append(Segment(before.ts, after.ts, SEGMENT_CLASS.get(after.kind, "other"), after.id, after))
    return out


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
        if seg.width >= threshold:
            if group:
                out.append(_group(group))
                group = []
            out.append(seg)
            continue
        group.append(seg)
        if group[-1].end - group[0].start >= threshold:
            out.append(_group(group))
            group = []
    if group:
        out.append(_group(group))
    return out


def _group(group: list[Segment]) -> Segment:
    weights: dict[str, float] = {}
    for seg in group:
        weights[seg.cls] = weights.get(seg.cls, 0.0) + seg.width
    cls = max(weights, key=weights.get)
    label = f"{len(group)} steps, mostly {CLASSES[cls]}"
    return Segment(group[0].start, group[-1].end, cls, group[0].event_id, label)


def timeline_html(session: Session, budget_s: float | None) -> str:
    segs = segments(session)
    if not segs:
        return '<div class="kbt-time"><p class="kbt-muted">No timestamps in this log: no time axis.</p></div>'
    start, end = segs[0].start, segs[-1].end
    used = end - start
    span = max(used, budget_s or 0.0) or 1.0
    bars = []
    for seg in merge_small(segs, span):
        left, width = (seg.start - start) / span * 100, max(seg.width / span * 100, 0.05)
        title = f"{seg.label} · {fmt_duration(seg.width)}"
        bars.append(f'<a class="seg seg-{seg.cls}" href="#e-{seg.event_id}" style="left:{left:.3f}%;'
                    f'width:{width:.3f}%" title="{esc(title)}"></a>')
    marks = f'<span class="kbt-mark end" style="left:{used / span * 100:.3f}%" title="session ended"></span>'
    if budget_s:
        marks += '<span class="kbt-mark budget" style="left:100%" title="budget"></span>'
    return (f'<div class="kbt-time"><div class="kbt-axis">{"".join(bars)}{marks}</div>'
            f'<div class="kbt-axis-legend">{_legend(segs, used, budget_s)}</div>{_longest(segs)}</div>')


def _legend(segs: list[Segment], used: float, budget_s: float | None) -> str:
    totals: dict[str, float] = {}
    for seg in segs:
        totals[seg.cls] = totals.get(seg.cls, 0.0) + seg.width
    parts = [f'<span class="kbt-key seg-{cls}"></span>{esc(CLASSES[cls])} {fmt_duration(t)} '
             f'({t / used * 100:.0f}%)' for cls, t in sorted(totals.items(), key=lambda kv: -kv[1])]
    head = f"wall clock {fmt_duration(used)}"
    if budget_s:
        head += f" of a {fmt_duration(budget_s)} budget ({used / budget_s * 100:.0f}%)"
    return f"<strong>{head}</strong> · " + " · ".join(parts)


def _longest(segs: list[Segment]) -> str:
    tools = sorted((s for s in segs if s.cls in ("tool", "sub")), key=lambda s: -s.width)[:5]
    if not tools:
        return ""
    items = "".join(f'<li><a href="#e-{s.event_id}">{esc(s.label)}</a> {fmt_duration(s.width)}</li>'
                    for s in tools)
    return f'<details class="kbt-longest"><summary>longest tool calls</summary><ol>{items}</ol></details>'
