"""Events → views: what the viewer shows of each event, decided once, as plain data.

A view is a small dict of texts and constant class names (keys below). The first screen turns views into HTML on
the server (`markup.py`, with pygments); later chunks are written as the views themselves (JSON) and the page builds
their DOM (`static/transcript.js`, `renderItem`), inserting every text as text. Deciding labels, summaries,
badges and cut points here keeps the two emitters mechanical, so they cannot disagree about content.

Event view keys (absent = empty):
    i  event id (the anchor `#e-<i>`)          c  class list of the event element (constants only)
    f  form: "d" <details>, "b" block with a header, "l" one line
    o  1 when the <details> starts open         k  label (text)
    s  summary: a text, or parts (below)       g  badges: parts
    b  bodies: [css, text, lexer, blob, more]   (lexer "diff" | "bash" | None; blob reference and button label
       when the text is the preview of a longer one whose rest is in a blob file)
    e  child views (subagent span)
Turn header view: {"T": number, "s": parts}. Parts: a list whose items are a text or [class, text] or
[class, text, title] (a <span>; an empty class means none).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

import orjson

from kernelbench.transcripts import diffs
from kernelbench.transcripts.model import Event, Kind, Usage

PREVIEW_CHARS = 6_000        # a body longer than this shows a preview and an expander
PREVIEW_LINES = 120
HIGHLIGHT_LIMIT = 4_000      # scripts longer than this stay plain: pygments would cost more than the page
SUMMARY_CHARS = 140
SHELL_TOOLS = {"bash", "shell", "exec_command", "run_shell_command", "local_shell_call", "shellcommand"}

View = dict[str, Any]


def esc(text: Any) -> str:
    return escape(text if isinstance(text, str) else str(text), quote=True)


def esc_text(text: str) -> str:
    """Escaping for element content (never attributes): the single quote needs none there (double quotes are
    still escaped so no attribute-looking text survives in the markup), one pass fewer than html.escape."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@dataclass
class RenderContext:
    """What rendering needs beyond the event: results by call id, the cwd to shorten paths, blob output."""

    results: dict[str, Event] = field(default_factory=dict)
    cwd: str | None = None
    write_blob: Callable[[str, str], str] | None = None   # (key, text after the preview) → blob reference

    def shorten(self, path: str) -> str:
        if self.cwd and path.startswith(self.cwd.rstrip("/") + "/"):
            return path[len(self.cwd.rstrip("/")) + 1:]
        return path


# ---------------------------------------------------------------------------------------------- bodies

def body(text: str, ctx: RenderContext, key: tuple[int, str], *, lexer: str | None = None, css: str = "kbt-pre",
         lines: int | None = None) -> list:
    """[css, shown text, lexer, blob, button label]; long text is cut to a preview, the rest put in a blob
    file named by `key` (event id, part). `lines` is the text's line count where the caller has it already
    (counting a long output twice is measurable)."""
    size = len(text)
    if size <= PREVIEW_CHARS and (size < PREVIEW_LINES or (text.count("\n") + 1 if lines is None else lines)
                                  <= PREVIEW_LINES) or ctx.write_blob is None:
        return [css, text, lexer, None, None]       # (a text shorter than PREVIEW_LINES has fewer lines)
    if lines is None:
        lines = text.count("\n") + 1
    more = f"show all {_size(size)} ({lines:,} lines)"
    preview = _preview(text, lines)
    # the blob holds the rest only: the page has the preview, and writing it twice is most of a blob's bytes
    return [css, preview, lexer, ctx.write_blob(f"{key[0]}-{key[1]}", text[len(preview):]), more]


def _preview(text: str, lines: int) -> str:
    """The head shown before the expander: PREVIEW_CHARS at most, up to the PREVIEW_LINES-th line end."""
    cut = text[:PREVIEW_CHARS]
    if lines <= PREVIEW_LINES or cut.count("\n") < PREVIEW_LINES:   # the usual case: no list of lines
        return cut
    lines_of_cut = cut.split("\n", PREVIEW_LINES)
    if len(lines_of_cut) > PREVIEW_LINES:
        cut = "\n".join(lines_of_cut[:PREVIEW_LINES])
    return cut


def _size(chars: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if chars >= scale:
            return f"{chars / scale:.1f} {unit}"
    return f"{chars} characters"


def one_line(text: Any, limit: int = SUMMARY_CHARS) -> str:
    text = str(text) if text is not None else ""
    # the head of a long text gives the same line as the whole (collapsing only shrinks): no split of megabytes;
    # a head of one and a half lines is enough for most texts (prose has single spaces), four lines for the rest
    for reach in (limit + limit // 2, limit * 4):
        head = " ".join(text[:reach].split())
        if len(head) >= limit:
            return head[: limit - 1] + "…"
        if len(text) <= reach:
            return head
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- tool calls

def tool_target(event: Event, ctx: RenderContext, command: str | None) -> str:
    """The one thing worth showing beside a tool's name: its command (`shell_command` of its arguments), file,
    pattern or query."""
    args = event.input
    if isinstance(args, str):
        return one_line(args)
    if not isinstance(args, dict):
        return ""
    if command is not None:
        return one_line(command)
    for key in ("file_path", "filePath", "path", "notebook_path", "pattern", "query", "url", "description",
                "prompt", "patch", "patchText", "input"):
        value = args.get(key)
        if isinstance(value, str) and value:
            if key in ("patch", "patchText"):
                return one_line(", ".join(diffs.patch_paths(value)) or value)
            return one_line(ctx.shorten(value) if "path" in key.lower() else value)
    first = next((v for v in args.values() if isinstance(v, (str, int, float))), "")
    return one_line(first)


def shell_command(args: dict) -> str | None:
    """The shell command of a tool call's arguments (`command` or `cmd`, a string or an argv list), if any."""
    command = args.get("command", args.get("cmd"))
    if isinstance(command, list):
        return _unwrap_shell(command)
    return command if isinstance(command, str) else None


def _unwrap_shell(command: list) -> str:
    parts = [str(p) for p in command]
    if len(parts) == 3 and parts[0] in ("bash", "zsh", "sh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return " ".join(parts)


def tool_input_bodies(event: Event, ctx: RenderContext, command: str | None) -> list[list]:
    args = event.input
    if isinstance(args, dict):
        if command is not None and ((event.name or "").lower() in SHELL_TOOLS or len(args) <= 3):
            # one-line commands are many and pygments' per-call cost dominates: highlight multi-line scripts
            lexer = "bash" if "\n" in command and len(command) <= HIGHLIGHT_LIMIT else None
            bodies = [body(command, ctx, (event.id, "cmd"), lexer=lexer)]
            if len(args) > 1:
                rest = {k: v for k, v in args.items() if k not in ("command", "cmd")}
                if rest:
                    bodies.append(body(_json(rest), ctx, (event.id, "args")))
            return bodies
        patch = args.get("patch", args.get("patchText"))
        if isinstance(patch, str):
            return [body(patch, ctx, (event.id, "patch"), lexer="diff")]
    if args is None:
        return []
    return [body(args if isinstance(args, str) else _json(args), ctx, (event.id, "in"))]


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


# ---------------------------------------------------------------------------------------------- badges

def badges(event: Event) -> list | None:
    if event.exit_code is None and event.is_error is None and event.duration_s is None and event.usage is None:
        return None                             # most events: nothing to show
    parts: list = []
    if event.exit_code is not None:
        parts.append(["kbt-b bad" if event.exit_code else "kbt-b", f"exit {event.exit_code}"])
    elif event.is_error:
        parts.append(["kbt-b bad", "error"])
    if event.duration_s is not None and event.duration_s >= 0.05:
        parts.append(["kbt-b", fmt_duration(event.duration_s)])
    if event.usage is not None:
        parts.append(["kbt-b tok", f"{fmt_tokens(event.usage.total)} tok", usage_title(event.usage)])
    return parts or None


def usage_title(usage: Usage) -> str:
    return (f"input {usage.input:,} · output {usage.output:,} · cache read {usage.cache_read:,} · "
            f"cache write {usage.cache_write:,}" + (f" · reasoning {usage.reasoning:,}" if usage.reasoning else ""))


def fmt_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1e6:.1f}M"
    if count >= 1_000:
        return f"{count / 1e3:.1f}k"
    return str(count)


def fmt_duration(seconds: float) -> str:
    if not 0 <= seconds < float("inf"):  # NaN, a negative span or an endless one: no duration to show
        return "—"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"


# ---------------------------------------------------------------------------------------------- events

KIND_CLASS = {kind: f"ev ev-{kind.value}" for kind in Kind}


def _view(event: Event, form: str, label: str, summary: Any = None, bodies: list | None = None,
          extra: str = "") -> View:
    exit_code, is_error, usage = event.exit_code, event.is_error, event.usage
    error = " is-err" if is_error or (exit_code is not None and exit_code != 0) else ""
    view: View = {"i": event.id, "c": f"{KIND_CLASS[event.kind]}{error}{extra}", "f": form, "k": label}
    if summary is not None:
        view["s"] = summary
    if bodies:
        view["b"] = bodies
    if exit_code is not None or is_error is not None or usage is not None or event.duration_s is not None:
        marks = badges(event)
        if marks:
            view["g"] = marks
    return view


def event_view(event: Event, ctx: RenderContext) -> View:
    return RENDERERS.get(event.kind, _unknown)(event, ctx)


def _prose(event: Event, ctx: RenderContext, text: str | None = None) -> list[list]:
    return [body((event.text or "") if text is None else text, ctx, (event.id, "t"), css="kbt-pre kbt-prose")]


def _user(event: Event, ctx: RenderContext) -> View:
    return _view(event, "b", "User", bodies=_prose(event, ctx))


def _assistant(event: Event, ctx: RenderContext) -> View:
    label = f"Assistant · {event.model}" if event.model else "Assistant"
    return _view(event, "b", label, bodies=_prose(event, ctx))


def _thinking(event: Event, ctx: RenderContext) -> View:
    return _view(event, "d", "Thinking", one_line(event.text), _prose(event, ctx))


def _tool_call(event: Event, ctx: RenderContext) -> View:
    result = ctx.results.get(event.call_id or "")
    args = event.input
    command = shell_command(args) if isinstance(args, dict) else None    # read once for both uses
    target = tool_target(event, ctx, command)
    if result is None:
        summary: Any = [target, ["kbt-b warn", "no result"]]
    elif result.is_error or result.exit_code not in (None, 0):
        summary = [target, ["kbt-b bad", "failed"]]
    else:
        summary = target
    return _view(event, "d", event.name or "tool", summary, tool_input_bodies(event, ctx, command), " kbt-call")


def _tool_result(event: Event, ctx: RenderContext) -> View:
    text = event.output or ""
    lines = text.count("\n") + 1 if text else 0
    name = event.name or "result"
    summary = f"{name} output · {lines:,} line{'s' if lines != 1 else ''}" if text else f"{name} output · empty"
    return _view(event, "d", "→", summary, [body(text, ctx, (event.id, "o"), lines=lines)])


def _file_edit(event: Event, ctx: RenderContext) -> View:
    added, removed = diffs.stats(event.diff)
    path = ctx.shorten(event.path or "?")
    summary = [f"{posixpath.basename(path) or path} ", ["kbt-path", path], ["kbt-add", f"+{added}"], " ",
               ["kbt-del", f"−{removed}"]]
    view = _view(event, "d", "Edit", summary,
                 [body(event.diff or "", ctx, (event.id, "d"), lexer="diff", css="kbt-pre kbt-diff")])
    if added + removed <= 40:
        view["o"] = 1
    return view


def _compaction(event: Event, ctx: RenderContext) -> View:
    return _view(event, "d", "Compaction", one_line(event.text), _prose(event, ctx))


def _system(event: Event, ctx: RenderContext) -> View:
    text = event.text or ""
    if len(text) <= SUMMARY_CHARS and "\n" not in text:
        return _view(event, "l", "System", text)
    label = "Context" if (event.record_type or "").startswith("context") else "System"
    return _view(event, "d", label, one_line(text), _prose(event, ctx, text))


def _unknown(event: Event, ctx: RenderContext) -> View:
    return _view(event, "d", "Unknown record", event.record_type or "?",
                 [body(event.raw or "", ctx, (event.id, "r"))])


def subagent_view(event: Event, children: list[View], counts: dict[str, int], usage: Usage) -> View:
    summary: list = [(f"{one_line(event.name or 'subagent', 60)} · {one_line(event.text or '', 80)} · "
                      f"{counts.get('events', 0)} events · {counts.get('tool_call', 0)} tool calls")]
    if not usage.is_zero():
        summary += [" · ", ["", f"{fmt_tokens(usage.total)} tok", usage_title(usage)]]
    view = _view(event, "d", "Subagent", summary)
    view["e"] = children
    return view


RENDERERS = {Kind.USER: _user, Kind.ASSISTANT: _assistant, Kind.THINKING: _thinking, Kind.TOOL_CALL: _tool_call,
             Kind.TOOL_RESULT: _tool_result, Kind.FILE_EDIT: _file_edit, Kind.COMPACTION: _compaction,
             Kind.SYSTEM: _system, Kind.UNKNOWN: _unknown}
