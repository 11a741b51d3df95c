"""A transcript's conversation in the terminal (`kernelbench transcript show --events`), through rich.

The text is the agent's and the tools': untrusted. It is only ever handed to rich as `Text` (never parsed as
markup), and every control character is shown as its escape (`\\x1b`), so a transcript cannot move the cursor,
recolour, retitle or clear the reader's terminal.
"""

from __future__ import annotations

import json
import re

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from kernelbench.transcripts.model import Event, Kind, Session

RESULT_LINES = 40  # a tool's output is cut to its first lines; the messages are shown whole
# C0 and C1 control characters (newline and tab kept), DEL, and the bidirectional overrides that reorder text
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
HEADINGS = {
    Kind.USER: ("user", "bold cyan"), Kind.ASSISTANT: ("assistant", "bold green"),
    Kind.THINKING: ("thinking", "dim"), Kind.SYSTEM: ("system", "dim"), Kind.COMPACTION: ("compaction", "dim"),
}


def terminal_safe(text: object) -> str:
    """The text with every control character written as its escape."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", str(text))


def print_events(session: Session, console: Console | None = None) -> None:
    console = console or Console()
    for event in session.events:
        _print_event(console, event, depth=0)


def _print_event(console: Console, event: Event, depth: int) -> None:
    for renderable in _renderables(event):
        # into a pipe or file, lines stay as the transcript wrote them rather than cut at 80 columns
        console.print(Text("  " * depth) + renderable if isinstance(renderable, Text) else renderable,
                      highlight=False, soft_wrap=not console.is_terminal)
    for child in event.events or []:
        _print_event(console, child, depth + 1)


def _renderables(event: Event) -> list:
    number = f" #{event.id}"
    if event.kind in HEADINGS:
        title, style = HEADINGS[event.kind]
        return [Rule(Text(title + number, style=style), align="left", style="dim"),
                Text(terminal_safe(event.text or ""), style="dim" if style == "dim" else "")]
    if event.kind is Kind.TOOL_CALL:
        return [Text.assemble(("→ ", "bold yellow"), (terminal_safe(event.name or "?"), "bold yellow"),
                              (f"{number}  ", "dim"), terminal_safe(_arguments(event.input)))]
    if event.kind is Kind.TOOL_RESULT:
        status = "error" if event.is_error else "ok"
        if event.exit_code is not None:
            status += f", exit {event.exit_code}"
        return [Text.assemble(("← ", "bold magenta"), (terminal_safe(event.name or "result"), "bold magenta"),
                              (f"{number} ({status})", "dim")),
                Text(terminal_safe(_first_lines(event.output or "")))]
    if event.kind is Kind.FILE_EDIT:
        return [Text.assemble(("✎ ", "bold blue"), (terminal_safe(event.path or "?"), "bold blue"), (number, "dim")),
                Text(terminal_safe(_first_lines(event.diff or "")))]
    if event.kind is Kind.SUBAGENT:
        return [Rule(Text(f"subagent {terminal_safe(event.name or '')}{number}", style="bold"), align="left")]
    return [Text(f"[{terminal_safe(event.record_type or event.kind.value)}{number}] "
                 f"{terminal_safe((event.raw or event.text or '')[:300])}", style="dim")]


def _arguments(value: object) -> str:
    """A tool call's arguments: a shell command as itself, anything else as compact JSON."""
    if isinstance(value, dict) and set(value) == {"command"}:
        return str(value["command"])
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _first_lines(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= RESULT_LINES:
        return "\n".join(lines)
    return "\n".join(lines[:RESULT_LINES]) + f"\n… {len(lines) - RESULT_LINES} more lines"
