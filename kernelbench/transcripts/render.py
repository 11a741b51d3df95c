"""Events → HTML fragments for the transcript viewer.

Everything from the transcript passes through `esc` (or pygments, which escapes too); nothing from it ever becomes
a URL, an attribute name or markup. Long bodies are cut to a preview here and the full text goes to a blob file
that the page loads on demand and inserts as text (never as HTML).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

import orjson
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer, DiffLexer

from kernelbench.transcripts import diffs
from kernelbench.transcripts.model import Event, Kind, Usage

PREVIEW_CHARS = 6_000        # a body longer than this shows a preview and an expander
PREVIEW_LINES = 120
HIGHLIGHT_LIMIT = 4_000      # scripts longer than this stay plain: pygments would cost more than the page
SUMMARY_CHARS = 140
_FORMATTER = HtmlFormatter(nowrap=True)
_DIFF, _BASH = DiffLexer(), BashLexer()
SHELL_TOOLS = {"bash", "shell", "exec_command", "run_shell_command", "local_shell_call", "shellcommand"}


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
    write_blob: Callable[[str, str], str] | None = None   # (key, full text) → blob file name
    # pygments for scripts only on the first screen: its per-call cost is most of a chunk's build time, and
    # later chunks stay readable as plain text; their diffs are sent plain and coloured line by line by the page
    # when the chunk arrives (as text nodes), which costs the browser less than the build
    highlight: bool = True

    def shorten(self, path: str) -> str:
        if self.cwd and path.startswith(self.cwd.rstrip("/") + "/"):
            return path[len(self.cwd.rstrip("/")) + 1:]
        return path


# ---------------------------------------------------------------------------------------------- bodies

def body(text: str, ctx: RenderContext, key: str, *, lexer=None, css: str = "kbt-pre",
         lines: int | None = None) -> str:
    """A <pre> with a copy button; long text is cut to a preview and the rest put in a blob file. `lines` is the
    text's line count where the caller has it already (counting a long output twice is measurable)."""
    text = text or ""
    preview, cut = _preview(text)
    if cut and ctx.write_blob is not None:
        blob = ctx.write_blob(key, text)
        if lexer is _DIFF and not ctx.highlight:
            inner = esc_text(preview)          # coloured by the page, as below
        else:
            inner = _highlighted(preview, lexer)
            css += " hl" if lexer is not None else ""
        more = (f'<button type="button" class="kbt-more-text" data-blob="{esc(blob)}">'
                f'show all {_size(len(text))} ({lines or text.count(chr(10)) + 1:,} lines)</button>')
        return (f'<div class="kbt-body"><button type="button" class="kbt-copy" title="copy">copy</button>'
                f'<pre class="{css} is-cut">{inner}</pre>{more}</div>')
    if lexer is _DIFF and not ctx.highlight:
        inner = esc_text(text)             # coloured by the page when its chunk arrives (transcript.js colorDiff)
    elif lexer is _DIFF or (lexer is not None and len(text) <= HIGHLIGHT_LIMIT):
        inner = _highlighted(text, lexer)
        css += " hl"
    else:
        inner = esc_text(text)
    return (f'<div class="kbt-body"><button type="button" class="kbt-copy" title="copy">copy</button>'
            f'<pre class="{css}">{inner}</pre></div>')


def _highlighted(text: str, lexer) -> str:
    if lexer is None:
        return esc_text(text)
    if lexer is _DIFF:
        return diff_lines(text)
    return highlight(text, lexer, _FORMATTER)


DIFF_CLASSES = {"+": "gi", "-": "gd", "@": "gu", "I": "gh"}   # by first character; headers checked apart


def diff_lines(text: str) -> str:
    """A diff marked up line by line with the token classes pygments' DiffLexer gives the same lines (it is a
    line classifier too), styled by the same pygments stylesheet; pygments' own formatter costs about 2 ms per
    diff here, which for thousands of edits is most of the page's build time. Escaping first keeps each line's
    first character (+ - @) as it was."""
    out = []
    for line in esc_text(text).split("\n"):
        cls = DIFF_CLASSES.get(line[:1])
        if cls == "gi" and line.startswith("+++ ") or cls == "gd" and line.startswith("--- "):
            cls = "gh"
        elif cls == "gu" and not line.startswith("@@") or cls == "gh" and not line.startswith("Index: "):
            cls = None
        out.append(f'<span class="{cls}">{line}</span>' if cls else line)
    return "\n".join(out)


def _preview(text: str) -> tuple[str, bool]:
    if len(text) <= PREVIEW_CHARS and text.count("\n", 0, PREVIEW_CHARS) < PREVIEW_LINES:
        return text, False
    cut = text[:PREVIEW_CHARS]
    lines = cut.split("\n", PREVIEW_LINES)
    if len(lines) > PREVIEW_LINES:          # up to (not including) the PREVIEW_LINES-th line end
        cut = "\n".join(lines[:PREVIEW_LINES])
    return cut, True


def _size(chars: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if chars >= scale:
            return f"{chars / scale:.1f} {unit}"
    return f"{chars} characters"


def one_line(text: Any, limit: int = SUMMARY_CHARS) -> str:
    text = str(text) if text is not None else ""
    # the head of a long text gives the same line as the whole (collapsing only shrinks): no split of megabytes
    head = " ".join(text[: limit * 4].split())
    if len(head) >= limit:
        return head[: limit - 1] + "…"
    text = " ".join(text.split()) if len(text) > limit * 4 else head
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- tool calls

def tool_target(event: Event, ctx: RenderContext) -> str:
    """The one thing worth showing beside a tool's name: its command, file, pattern or query."""
    args = event.input
    if isinstance(args, str):
        return one_line(args)
    if not isinstance(args, dict):
        return ""
    command = args.get("command", args.get("cmd"))
    if isinstance(command, list):
        command = _unwrap_shell(command)
    if isinstance(command, str):
        return one_line(command)
    for key in ("file_path", "filePath", "path", "notebook_path", "pattern", "query", "url", "description",
                "prompt", "patch", "patchText", "input"):
        value = args.get(key)
        if isinstance(value, str) and value:
            if key in ("patch", "patchText"):
                return one_line(", ".join(p for p, _ in diffs.from_apply_patch(value)) or value)
            return one_line(ctx.shorten(value) if "path" in key.lower() else value)
    first = next((v for v in args.values() if isinstance(v, (str, int, float))), "")
    return one_line(first)


def _unwrap_shell(command: list) -> str:
    parts = [str(p) for p in command]
    if len(parts) == 3 and parts[0] in ("bash", "zsh", "sh") and parts[1] in ("-lc", "-c"):
        return parts[2]
    return " ".join(parts)


def tool_input_body(event: Event, ctx: RenderContext) -> str:
    args = event.input
    name = (event.name or "").lower()
    if isinstance(args, dict):
        command = args.get("command", args.get("cmd"))
        if isinstance(command, list):
            command = _unwrap_shell(command)
        if isinstance(command, str) and (name in SHELL_TOOLS or len(args) <= 3):
            rest = {k: v for k, v in args.items() if k not in ("command", "cmd")}
            extra = body(_json(rest), ctx, f"{event.id}-args") if rest else ""
            # one-line commands are many and pygments' per-call cost dominates: highlight multi-line scripts
            lexer = _BASH if ctx.highlight and "\n" in command else None
            return body(command, ctx, f"{event.id}-cmd", lexer=lexer) + extra
        patch = args.get("patch", args.get("patchText"))
        if isinstance(patch, str):
            return body(patch, ctx, f"{event.id}-patch", lexer=_DIFF)
    if args is None:
        return ""
    return body(args if isinstance(args, str) else _json(args), ctx, f"{event.id}-in")


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


# ---------------------------------------------------------------------------------------------- events

def anchor(event: Event) -> str:
    return f'<a class="kbt-a" href="#e-{event.id}" title="link to this event">#{event.id}</a>'


def badges(event: Event) -> str:
    if event.exit_code is None and event.is_error is None and event.duration_s is None and event.usage is None:
        return ""                               # most events: nothing to show
    parts = []
    if event.exit_code is not None:
        parts.append(f'<span class="kbt-b{" bad" if event.exit_code else ""}">exit {event.exit_code}</span>')
    elif event.is_error:
        parts.append('<span class="kbt-b bad">error</span>')
    if event.duration_s is not None and event.duration_s >= 0.05:
        parts.append(f'<span class="kbt-b">{fmt_duration(event.duration_s)}</span>')
    if event.usage is not None:
        # the title is digits and fixed words: nothing in it to escape
        parts.append(f'<span class="kbt-b tok" title="{usage_title(event.usage)}">'
                     f'{fmt_tokens(event.usage.total)} tok</span>')
    return "".join(parts)


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
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"


KIND_CLASS = {kind: f"ev ev-{kind.value}" for kind in Kind}


def _classes(event: Event, extra: str = "") -> str:
    error = " is-err" if event.is_error or (event.exit_code not in (None, 0)) else ""
    return f"{KIND_CLASS[event.kind]}{error}{extra}"


def _details(event: Event, label: str, summary: str, inner: str, *, open_: bool = False, extra: str = "") -> str:
    # label and summary arrive escaped: most labels are constants, escaping them per event is wasted work
    return (f'<details class="{_classes(event, extra)}" id="e-{event.id}"{" open" if open_ else ""}>'
            f'<summary><span class="kbt-k">{label}</span> <span class="kbt-s">{summary}</span>'
            f'{badges(event)}{anchor(event)}</summary>{inner}</details>')


def _block(event: Event, label: str, inner: str) -> str:
    return (f'<div class="{_classes(event)}" id="e-{event.id}"><div class="kbt-h"><span class="kbt-k">'
            f'{label}</span>{badges(event)}{anchor(event)}</div>{inner}</div>')


def render_event(event: Event, ctx: RenderContext) -> str:
    renderer = RENDERERS.get(event.kind, _unknown)
    return renderer(event, ctx)


def _user(event: Event, ctx: RenderContext) -> str:
    return _block(event, "User", body(event.text or "", ctx, f"{event.id}-t", css="kbt-pre kbt-prose"))


def _assistant(event: Event, ctx: RenderContext) -> str:
    label = "Assistant" + (f" · {esc_text(event.model)}" if event.model else "")
    return _block(event, label, body(event.text or "", ctx, f"{event.id}-t", css="kbt-pre kbt-prose"))


def _thinking(event: Event, ctx: RenderContext) -> str:
    return _details(event, "Thinking", esc_text(one_line(event.text)),
                    body(event.text or "", ctx, f"{event.id}-t", css="kbt-pre kbt-prose"))


def _tool_call(event: Event, ctx: RenderContext) -> str:
    result = ctx.results.get(event.call_id or "")
    status = ""
    if result is not None and (result.is_error or result.exit_code not in (None, 0)):
        status = '<span class="kbt-b bad">failed</span>'
    elif result is None:
        status = '<span class="kbt-b warn">no result</span>'
    summary = f"{esc_text(tool_target(event, ctx))}{status}"
    return _details(event, esc_text(event.name or "tool"), summary, tool_input_body(event, ctx), extra=" kbt-call")


def _tool_result(event: Event, ctx: RenderContext) -> str:
    text = event.output or ""
    lines = text.count("\n") + 1 if text else 0
    summary = f"{esc(event.name or 'result')} output · {lines:,} line{'s' if lines != 1 else ''}"
    if not text:
        summary = f"{esc(event.name or 'result')} output · empty"
    return _details(event, "→", summary, body(text, ctx, f"{event.id}-o", lines=lines))


def _file_edit(event: Event, ctx: RenderContext) -> str:
    added, removed = diffs.stats(event.diff)
    path = ctx.shorten(event.path or "?")
    summary = (f'{esc(posixpath.basename(path) or path)} <span class="kbt-path">{esc(path)}</span>'
               f'<span class="kbt-add">+{added}</span> <span class="kbt-del">−{removed}</span>')
    small = (added + removed) <= 40
    return _details(event, "Edit", summary, body(event.diff or "", ctx, f"{event.id}-d", lexer=_DIFF,
                                                 css="kbt-pre kbt-diff"), open_=small)


def _compaction(event: Event, ctx: RenderContext) -> str:
    return _details(event, "Compaction", esc_text(one_line(event.text)),
                    body(event.text or "", ctx, f"{event.id}-t", css="kbt-pre kbt-prose"))


def _system(event: Event, ctx: RenderContext) -> str:
    text = event.text or ""
    if len(text) <= SUMMARY_CHARS and "\n" not in text:
        return (f'<div class="{_classes(event)}" id="e-{event.id}"><span class="kbt-k">System</span> '
                f'<span class="kbt-s">{esc(text)}</span>{badges(event)}{anchor(event)}</div>')
    label = "Context" if (event.record_type or "").startswith("context") else "System"
    return _details(event, label, esc_text(one_line(text)),
                    body(text, ctx, f"{event.id}-t", css="kbt-pre kbt-prose"))


def _unknown(event: Event, ctx: RenderContext) -> str:
    return _details(event, "Unknown record", esc(event.record_type or "?"),
                    body(event.raw or "", ctx, f"{event.id}-r"))


def render_subagent(event: Event, ctx: RenderContext, inner: str, counts: dict[str, int], usage: Usage) -> str:
    summary = (f"{esc(one_line(event.name or 'subagent', 60))} · {esc(one_line(event.text or '', 80))} · "
               f"{counts.get('events', 0)} events · {counts.get('tool_call', 0)} tool calls")
    if not usage.is_zero():
        summary += f' · <span title="{esc(usage_title(usage))}">{fmt_tokens(usage.total)} tok</span>'
    return _details(event, "Subagent", summary, f'<div class="kbt-sub">{inner}</div>')


RENDERERS = {Kind.USER: _user, Kind.ASSISTANT: _assistant, Kind.THINKING: _thinking, Kind.TOOL_CALL: _tool_call,
             Kind.TOOL_RESULT: _tool_result, Kind.FILE_EDIT: _file_edit, Kind.COMPACTION: _compaction,
             Kind.SYSTEM: _system, Kind.UNKNOWN: _unknown}
