"""`kernelbench transcript show|convert`: read any agent CLI's log through the normalized model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


SHOW_EXAMPLE = """examples:
  kernelbench transcript show runs/<run_id>/transcript.jsonl
  kernelbench transcript show ~/.codex/sessions/2025/09/24/rollout-....jsonl --json | jq .tokens
  kernelbench transcript show runs/<run_id>/events.jsonl --events | less -R
"""
CONVERT_EXAMPLE = """examples:
  kernelbench transcript convert ~/.claude/projects/-work/1e75cbed.jsonl -o transcript.jsonl
  kernelbench transcript convert session.json -o shared.jsonl --redact --redact-base64
"""
HTML_EXAMPLE = """examples:
  kernelbench transcript html runs/<run_id>/transcript.jsonl -o /tmp/view && python -m http.server -d /tmp/view
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("transcript", help="inspect or convert an agent transcript",
                                   description="Read an agent CLI's log (Claude Code, Codex, opencode, Gemini, "
                                               "Kimi, Cursor or normalized JSONL; detected by content).")
    commands = parser.add_subparsers(dest="transcript_command", metavar="COMMAND")
    show = commands.add_parser("show", help="summarize a transcript, or print its conversation", epilog=SHOW_EXAMPLE,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               description="Format and version, models, events by kind, tool calls by name, tokens, "
                                           "duration, completeness and the records that were not understood; "
                                           "with --events, the conversation itself. Exits 2 on a file in no "
                                           "format it knows.")
    show.add_argument("file", type=Path, help="the transcript file")
    output = show.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the summary as JSON")
    output.add_argument("--events", action="store_true",
                        help="print the conversation: messages, tool calls and their results, file edits")
    show.set_defaults(func=run_show)
    convert = commands.add_parser("convert", help="write the normalized JSONL form", epilog=CONVERT_EXAMPLE,
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  description="Parse any supported transcript and write it as normalized JSONL.")
    convert.add_argument("file", type=Path, help="the transcript file")
    convert.add_argument("-o", "--output", type=Path, required=True, help="where to write the .jsonl")
    convert.add_argument("--redact", action="store_true",
                         help="mask API keys, bearer tokens, secrets assigned in text and home-directory paths")
    convert.add_argument("--redact-base64", action="store_true",
                         help="with --redact, also replace base64 blobs of 200+ characters by their length")
    convert.set_defaults(func=run_convert)
    html = commands.add_parser("html", help="write a standalone viewer page", epilog=HTML_EXAMPLE,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               description="Render the transcript viewer into a folder (index.html, assets, "
                                           "chunk files); open index.html or serve the folder.")
    html.add_argument("file", type=Path, help="the transcript file")
    html.add_argument("-o", "--output", type=Path, required=True, help="folder to write")
    html.add_argument("--budget", type=float, default=None, help="wall-clock budget in seconds, for the time axis")
    html.set_defaults(func=run_html)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def run_show(args: argparse.Namespace) -> int:
    from kernelbench.transcripts.loader import load
    from kernelbench.transcripts.summary import summarize

    session = load(args.file.resolve())  # the reader opens no link: a link the user names is followed here
    refuse_unknown(session, args.file)
    if args.events:
        from kernelbench.transcripts.terminal import print_events

        print_events(session)
        return 0
    summary = summarize(session)
    if args.json:
        try:
            sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:       # `| head` closed the pipe: not an error of ours
            sys.stderr.close()
    else:
        print_summary(summary)
    return 0


def refuse_unknown(session, path: Path) -> None:
    """A file no parser recognised (or an empty one) is not a transcript: say so, and which formats are read."""
    from kernelbench.errors import KernelBenchError
    from kernelbench.transcripts.formats import document_formats, line_formats

    if session.format in ("unknown", "empty"):
        known = ", ".join(getattr(module, "NAME", "normalized") for module in (*line_formats(), *document_formats()))
        raise KernelBenchError(f"{'an empty file' if session.format == 'empty' else 'no transcript format recognised'}"
                               f"; the formats read are: {known}", path=path)


def run_convert(args: argparse.Namespace) -> int:
    from kernelbench.transcripts.loader import load
    from kernelbench.transcripts.normalized import write_session
    from kernelbench.transcripts.redact import redact_session

    session = load(args.file.resolve())  # the reader opens no link: a link the user names is followed here
    if args.redact or args.redact_base64:
        redact_session(session, base64=args.redact_base64)
    write_session(session, args.output)
    print(f"wrote {args.output} ({sum(1 for _ in session.walk())} events, format {session.format})",
          file=sys.stderr)
    return 0


def run_html(args: argparse.Namespace) -> int:
    from kernelbench.transcripts.loader import load
    from kernelbench.transcripts.viewer import write_page

    page = write_page(load(args.file.resolve()), args.output, budget_s=args.budget)
    print(f"wrote {page}", file=sys.stderr)
    return 0


def print_summary(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(show_header=False, box=None, pad_edge=False)
    tokens = summary["tokens"]
    cost = summary["cost_usd"]
    rows = [
        ("file", summary["path"]),
        ("format", f"{summary['format']} {summary['version'] or ''}".strip()),
        ("models", ", ".join(summary["models"]) or "-"),
        ("complete", "yes" if summary["complete"] else "NO (incomplete session)"),
        ("duration", f"{summary['duration_s']:.1f} s" if summary["duration_s"] is not None else "-"),
        ("events", f"{summary['events_total']}  " + _pairs(summary["events_by_kind"])),
        ("tool calls", f"{summary['tool_calls_total']}  " + _pairs(summary["tool_calls_by_name"])),
        ("tokens", (f"input {tokens['input']:,}  output {tokens['output']:,}  cache read {tokens['cache_read']:,}  "
                    f"cache write {tokens['cache_write']:,}  (reasoning {tokens['reasoning']:,})")),
        ("cost", "-" if cost is None else f"${cost:.4f}" + (" (estimate)" if summary["cost_is_estimate"] else "")),
        ("unknown records", f"{summary['unknown_records_total']}  " + _pairs(summary["unknown_records"])),
        ("parse issues", _pairs(summary["issues"]) or "none"),
    ]
    for key, value in rows:
        table.add_row(f"[bold]{key}[/bold]", str(value), )
    console.print(table, markup=True, highlight=False)


def _pairs(counts: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in counts.items())
