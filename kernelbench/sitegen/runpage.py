"""The run page's tabs: transcript, solution, logs, result.json and the annotation with its quotes in place."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer, PythonLexer, TextLexer

from kernelbench import inputs
from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.inputs import InputRefused
from kernelbench.results.dataset import RunRecord, count_lines

MAX_SHOWN_BYTES = inputs.SHOWN.max_bytes  # a bigger log is cut for the page (the run folder keeps it whole)
MAX_RAW_TRANSCRIPT = 4 << 20  # the raw fallback embeds at most this much of a transcript
RAW_TRANSCRIPT = inputs.Kind("transcript shown raw", MAX_RAW_TRANSCRIPT)
FILE_TABS = (
    ("solution", "solution.py", "solution.py", PythonLexer),
    ("check", "check.log", "check.log", TextLexer),
    ("benchmark", "benchmark.log", "benchmark.log", TextLexer),
)


def run_tabs(
    record: RunRecord,
    annotation: dict | None,
    run_dir: Path,
    static_prefix: str,
    diagnostics: list[Diagnostic],
    viewer_reuse: ViewerReuse | None = None,
    transcript_read: bytes | None = None,
) -> tuple[list[dict], dict]:
    """The tabs in order, and what the transcript tab needs in the page head (its css/js or nothing).
    `transcript_read`: the transcript's bytes, when the build has read them already (to hash them)."""
    quoted = _quoted_lines(annotation)
    transcript_tab, transcript_info = _transcript_tab(record, run_dir, static_prefix, diagnostics, viewer_reuse,
                                                      transcript_read)
    tabs = [transcript_tab]
    for tab_id, label, name, lexer in FILE_TABS:
        tabs.append(_file_tab(record, tab_id, label, name, lexer, quoted.get(name, []), diagnostics))
    tabs.append(
        _file_tab(
            record,
            "result",
            "result.json",
            "result.json",
            JsonLexer,
            quoted.get("result.json", []),
            diagnostics,
        )
    )
    tabs.append(
        {
            "id": "annotation",
            "label": _annotation_label(annotation),
            "partial": "_annotation.html",
            "html": None,
            "text": None,
            "note": "",
        }
    )
    return tabs, transcript_info


def _annotation_label(annotation: dict | None) -> str:
    if not annotation:
        return "annotation (none)"
    bad = sum(not q["ok"] for q in annotation["quotes"])
    if not bad:
        return f"annotation ({annotation['verdict']})"
    return f"annotation ({annotation['verdict']}, {bad} quote mismatch{'es' if bad > 1 else ''})"


def _quoted_lines(annotation: dict | None) -> dict[str, list[int]]:
    """The lines to highlight in each file tab: those of verified quotes only (a quote that does not match may
    name any range, a hundred million lines say, which no file shown has)."""
    lines: dict[str, list[int]] = {}
    for quote in (annotation or {}).get("quotes", []):
        if quote["state"] == "verified":
            first, last = quote["lines"]
            lines.setdefault(quote["file"], []).extend(range(first, last + 1))
    return lines


def _tab(tab_id: str, label: str, *, html: Any = None, text: str | None = None, note: str = "") -> dict:
    return {"id": tab_id, "label": label, "html": html, "text": text, "note": note, "partial": None}


# ------------------------------------------------------------------------------------------------ files


def _file_tab(
    record: RunRecord,
    tab_id: str,
    label: str,
    name: str,
    lexer_cls,
    highlighted: list[int],
    diagnostics: list[Diagnostic],
) -> dict:
    try:
        path = record.locate(name)
        head = record.read_head(name) if path is not None else None
    except InputRefused as exc:
        diagnostics.append(exc.diagnostic)
        return _tab(tab_id, label, note=f"Not shown: {name} {exc.diagnostic.message}.")
    if path is None or head is None:  # (no path, no head)
        why = (
            "Imported from a published board: its files were not published."
            if record.imported
            else f"This run has no {name}."
        )
        return _tab(tab_id, label, note=why)
    text, note = _read_for_page(path, *head, diagnostics)
    return _tab(tab_id, label, html=highlight_source(text, lexer_cls(), tab_id, highlighted), note=note)


def _read_for_page(path: Path, data: bytes, size: int, diagnostics: list[Diagnostic]) -> tuple[str, str]:
    """Text of a run file for display (`data`: its first MAX_SHOWN_BYTES of `size`): invalid UTF-8 is shown with
    replacement marks and reported."""
    note = ""
    if size > MAX_SHOWN_BYTES:
        note = f"Showing the first {MAX_SHOWN_BYTES // 1024} KiB of {size // 1024} KiB."
    try:
        return data.decode("utf-8"), note
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 4:  # not just a multi-byte character cut by the size limit
            line = data[: exc.start].count(b"\n") + 1
            diagnostics.append(
                Diagnostic(
                    path=path,
                    line=line,
                    severity="warning",
                    message=f"not valid UTF-8 (byte {exc.start}); shown with replacement marks",
                    hint="the file is shown as is; re-save it as UTF-8 if it is yours",
                )
            )
        return data.decode("utf-8", errors="replace"), note


class _SiteFormatter(HtmlFormatter):
    """Pygments' HTML formatter, whose table of CSS classes (the style's, the same for every file of every page:
    the page loads the classes from pygments.css) is worked out once per process instead of once per file
    highlighted, a fifth of highlighting a small file; so is the span each token type opens (the formatter's
    `span_element_openers`, otherwise filled afresh for each file).

    The lines pygments formats (`_format_lines`: the tokens escaped, in their spans) are wrapped in one pass, as
    the options the site uses ask (`_wrap_lines`), instead of through pygments' chain of six generators that
    each hand on every line (inline numbers, highlighted lines, anchors, code, pre, div): a sixth of formatting
    result.json's 240 lines. The markup is pygments' own, byte for byte (tests/site/test_units.py holds it to
    HtmlFormatter's); any other options go through pygments' chain."""

    _classes: tuple[dict, dict] | None = None
    _openers: dict = {}
    ttype2class: dict  # set by HtmlFormatter._create_stylesheet
    class2style: dict

    def _create_stylesheet(self) -> None:
        cls = type(self)
        if cls._classes is None:
            super()._create_stylesheet()
            cls._classes = (self.ttype2class, self.class2style)
        else:
            self.ttype2class, self.class2style = cls._classes
        if not self.noclasses and not self.debug_token_types and not self.classprefix:  # the site's options
            self.span_element_openers = cls._openers

    def format_unencoded(self, tokensource, outfile) -> None:
        if not self._one_pass():
            super().format_unencoded(tokensource, outfile)
            return
        outfile.write(self._wrap_lines([line for _, line in self._format_lines(tokensource)]))

    def _one_pass(self) -> bool:
        """Whether `_wrap_lines` writes what pygments' chain would for these options."""
        return (self.linenos == 2 and self.anchorlinenos and bool(self.lineanchors) and self.wrapcode
                and self.linenostep == 1 and not self.linenospecial and not self.nowrap and not self.noclasses
                and not self.linespans and not self.filename and not self.full and not self.prestyles
                and not self.cssstyles)

    def _wrap_lines(self, lines: list[str]) -> str:
        """Pygments' wrapping of the formatted `lines` (HtmlFormatter._wrap_inlinelinenos, _highlight_lines,
        _wrap_lineanchors, _wrap_code, _wrap_pre, _wrap_div) for inline line numbers linked to line anchors."""
        first, anchor, marked = self.linenostart, self.lineanchors, self.hl_lines
        width = len(str(len(lines) + first - 1))
        out = [f'<div class="{self.cssclass}">' if self.cssclass else "<div>", "<pre><span></span>", "<code>"]
        for index, line in enumerate(lines, start=1):
            number = first + index - 1
            shown = '<a href="#%s-%d"><span class="linenos">%*d</span></a>%s' % (anchor, number, width, number, line)
            if index in marked:
                shown = f'<span class="hll">{shown}</span>'
            out.append('<a id="%s-%d" name="%s-%d"></a>%s' % (anchor, number, anchor, number, shown))
        out += ["</code>", "</pre>", "</div>\n"]
        return "".join(out)


def compile_lexers() -> None:
    """Compile the token tables of the lexers the run pages use (pygments compiles a lexer's regular expressions
    when its class is first used: 55 ms for Python's on this machine), and the formatter's CSS classes, before
    the render workers fork, so that each inherits them."""
    for _, _, _, lexer_cls in FILE_TABS:
        lexer_cls()
    JsonLexer()
    _SiteFormatter()


def highlight_source(text: str, lexer, anchor: str, highlighted: list[int], first_line: int = 1) -> Markup:
    """Pygments HTML (escaped by pygments) with line numbers, line anchors `<anchor>-L<n>` and quoted lines
    highlighted in place."""
    formatter = _SiteFormatter(
        linenos="inline",
        lineanchors=f"{anchor}-L",
        anchorlinenos=True,
        hl_lines=[n - first_line + 1 for n in highlighted],
        linenostart=first_line,
        cssclass="highlight",
        wrapcode=True,
    )
    return Markup(highlight(text, lexer, formatter))


# ------------------------------------------------------------------------------------------------ transcript


def _transcript_tab(
    record: RunRecord,
    run_dir: Path,
    static_prefix: str,
    diagnostics: list[Diagnostic],
    reuse: ViewerReuse | None = None,
    read: bytes | None = None,
) -> tuple[dict, dict]:
    none = {"assets": False}
    if reuse is not None:
        cached = reuse.lookup(run_dir)
        if cached is not None:
            diagnostics.extend(cached[1])
            return _tab("transcript", "transcript", html=cached[0]), {"assets": True}
    clear_run_dir(run_dir)
    if record.imported:
        return _tab(
            "transcript",
            "transcript",
            note="Imported from a published board: this run has no transcript (it was not published).",
        ), none
    try:
        path = record.locate(transcript_name(record))
        opened = record.reader_path(transcript_name(record)) if path is not None else None
    except InputRefused as exc:
        diagnostics.append(exc.diagnostic)
        return _tab("transcript", "transcript", note=f"Not shown: the transcript {exc.diagnostic.message}."), none
    if path is None or opened is None:
        return _tab("transcript", "transcript", note="No transcript was recorded for this run."), none
    found: list[Diagnostic] = []
    html = transcript_viewer_html(opened, run_dir, static_prefix, found, record.facts.budget_s,
                                  shown=path, data=read)
    diagnostics.extend(found)
    if html is not None:
        if reuse is not None:
            reuse.store(found)
        return _tab("transcript", "transcript", html=ViewerReuse.mark(html)), {"assets": True}
    clear_run_dir(run_dir)  # whatever chunks a viewer that failed half-way wrote
    return _raw_transcript_tab(path, record, diagnostics), none


def transcript_name(record: RunRecord) -> str:
    return record.facts.transcript or "transcript.jsonl"


def transcript_path(record: RunRecord) -> Path | None:
    """The run's transcript file, or None when there is none or the input policy refuses it."""
    return record.file(transcript_name(record))


def transcript_viewer_html(
    path: Path,
    run_dir: Path,
    static_prefix: str,
    diagnostics: list[Diagnostic],
    budget_s: float | None = None,
    shown: Path | None = None,
    data: bytes | None = None,
) -> Markup | None:
    """The transcripts stage's viewer (parses the file once); None when it is not available. `path` is how the
    parser reaches the file (through the run folder's descriptor), `shown` where reports say it is; `data` its
    bytes, when they were read already (through that descriptor, within the transcript's cap)."""
    try:
        from kernelbench.transcripts import load
        from kernelbench.transcripts.viewer import write_viewer
    except ImportError:
        return None
    shown = shown or path
    try:
        if data is None:
            inputs.check_size(path, inputs.TRANSCRIPT, shown)
        session = load(path, data=data)
        diagnostics.extend(transcript_diagnostics(shown, session))
        # chunks sit beside the run page (one folder per run, not two: the build creates and deletes fewer)
        return Markup(
            write_viewer(session, run_dir, asset_prefix=static_prefix, budget_s=budget_s, chunk_prefix="")
        )
    except KernelBenchError as exc:
        diagnostics.append(dataclasses.replace(exc.diagnostic, path=shown))
        return None
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError,
            UnicodeError, OSError) as exc:  # a bug of ours this transcript brings out: show it raw, report it
        diagnostics.append(Diagnostic(
            path=shown, message=f"the transcript viewer failed ({type(exc).__name__}: {str(exc)[:200]}); "
            "the transcript is shown raw",
            hint="kernelbench should have read this transcript: please report it as a bug, with the file"))
        return None


MAX_ISSUES_REPORTED = 5


def clear_run_dir(run_dir: Path) -> None:
    """Start the run's folder afresh (it holds the page and the viewer's chunks of an older transcript): emptied
    where it stands, made if missing. In a first build the folder was made a moment ago and is empty, and
    listing it costs less than removing and making it again."""
    try:
        with os.scandir(run_dir) as listing:
            entries = list(listing)
    except FileNotFoundError:
        run_dir.mkdir(parents=True, exist_ok=True)
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


class ViewerReuse:
    """The viewer's first screen taken from the previous build's page, for a run page re-rendered while its
    transcript did not change (an annotation edit): the transcript is neither parsed nor laid out again, and
    its chunk files (hard-linked from the previous site) stay as they are.

    The cache file holds the key and the viewer's diagnostics; the HTML is cut from the previous page between
    two comment markers, which no escaped content can contain (every '<' of transcript text is escaped).
    `key` must cover everything the viewer's output depends on: the transcript's content hash, the viewer's
    code hash, the asset prefix and the budget. A different key, or anything unreadable, means: render afresh.
    """

    START, END = "<!-- kernelbench:viewer -->", "<!-- /kernelbench:viewer -->"

    def __init__(self, cache_file: Path, key: str):
        self.cache_file, self.key = cache_file, key

    @classmethod
    def mark(cls, html: str) -> Markup:
        return Markup(cls.START) + Markup(html) + Markup(cls.END)

    def lookup(self, run_dir: Path) -> tuple[Markup, list[Diagnostic]] | None:
        try:
            saved = orjson.loads(self.cache_file.read_bytes())
            page = (run_dir / "index.html").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, orjson.JSONDecodeError):
            return None
        if not isinstance(saved, dict) or saved.get("key") != self.key:
            return None
        start = page.find(self.START)
        end = page.find(self.END, start)
        if start < 0 or end < 0:
            return None
        return Markup(page[start : end + len(self.END)]), [Diagnostic(**d) for d in saved["diagnostics"]]

    def store(self, diagnostics: list[Diagnostic]) -> None:
        found = [{**dataclasses.asdict(d), "path": str(d.path) if d.path else None} for d in diagnostics]
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        self.cache_file.unlink(missing_ok=True)  # may be a hard link into the previous site
        self.cache_file.write_bytes(orjson.dumps({"key": self.key, "diagnostics": found}))


# issues of values the log holds (not of a log cut short), and what to do about them
_VALUES_HINT = ("the log holds values its format does not allow; they are left out (their records shown raw) "
                "and the rest of the transcript is shown: check what wrote the log")
ISSUE_HINTS = {"bad_record": _VALUES_HINT, "bad_number": _VALUES_HINT, "parser_failed": _VALUES_HINT}


def transcript_diagnostics(path: Path, session) -> list[Diagnostic]:
    """The parser's issues (bad JSON, a truncated last line, invalid UTF-8...) as build diagnostics."""
    hint = "the transcript is shown as far as it could be read; if the run was cut off this is expected"
    found = [
        Diagnostic(
            path=path,
            line=issue.line,
            severity="warning",
            hint=ISSUE_HINTS.get(issue.kind, hint),
            message=f"transcript {issue.kind.replace('_', ' ')}: {issue.message}",
        )
        for issue in session.issues[:MAX_ISSUES_REPORTED]
    ]
    more = sum(session.issue_counts.values()) - len(found)
    if more > 0:
        found.append(
            Diagnostic(
                path=path,
                severity="warning",
                hint=hint,
                message=f"{more} more transcript issue(s): "
                + ", ".join(f"{k} ×{v}" for k, v in sorted(session.issue_counts.items())),
            )
        )
    return found


def _raw_transcript_tab(path: Path, record: RunRecord, diagnostics: list[Diagnostic]) -> dict:
    try:
        data, size = record.read_head(transcript_name(record), RAW_TRANSCRIPT) or (b"", 0)
    except InputRefused as exc:
        diagnostics.append(exc.diagnostic)
        return _tab("transcript", "transcript", note=f"Not shown: the transcript {exc.diagnostic.message}.")
    note = "The transcript as recorded (raw)."
    if size > MAX_RAW_TRANSCRIPT:
        note += f" Showing the first {MAX_RAW_TRANSCRIPT >> 20} MiB of {size >> 20} MiB."
    return _tab("transcript", "transcript", text=data.decode("utf-8", errors="replace"), note=note)


# ------------------------------------------------------------------------------------------------ quotes


def quote_excerpts(annotation: dict | None) -> None:
    """Give each quote an HTML excerpt: the file's lines when they match, both versions when they do not."""
    for quote in (annotation or {}).get("quotes", []):
        first = quote["lines"][0]
        if quote["ok"]:
            lines = _numbered(quote["text"], first)
            quote["html"] = highlight_source(quote["text"], _lexer_for(quote["file"]), "q", lines, first)
        else:
            said = highlight_source(quote["text"], _lexer_for(quote["file"]), "q", [], first)
            actual = quote.get("actual")
            real = (
                highlight_source(actual, _lexer_for(quote["file"]), "q", _numbered(actual, first), first)
                if actual
                else Markup("<p class='muted'>(no such lines in the run's files)</p>")
            )
            quote["html"] = (
                Markup("<p>The annotation quotes:</p>") + said + Markup("<p>The file has:</p>") + real
            )
        quote["link"] = _quote_anchor(quote["file"], first)


def _numbered(text: str, first: int) -> list[int]:
    """The line numbers `text` covers when it starts at line `first` (what the quote shows, never the range it
    claims)."""
    return list(range(first, first + max(1, count_lines(text))))


def _lexer_for(name: str):
    return PythonLexer() if name.endswith(".py") else JsonLexer() if name.endswith(".json") else TextLexer()


def _quote_anchor(name: str, line: int) -> str | None:
    tabs = {file: tab_id for tab_id, _, file, _ in FILE_TABS} | {"result.json": "result"}
    return f"#{tabs[name]}-L-{line}" if name in tabs else None
