"""Jinja2 rendering: one environment per build, autoescaping on, links made relative to the page."""

from __future__ import annotations

import hashlib
import marshal
import math
import posixpath
from pathlib import Path
from typing import Any

import jinja2
import orjson
from markupsafe import Markup

from kernelbench.errors import KernelBenchError
from kernelbench.sitegen.pages import Page
from kernelbench.text import visible


def make_environment(templates_dir: Path, bytecode_dir: Path | None = None) -> jinja2.Environment:
    """`bytecode_dir`: where compiled templates are kept between commands (jinja checks each against its
    source's hash, and writes through a temporary file and a rename, so a hard-linked copy is never edited)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(bytecode_dir)) if bytecode_dir else None,
        autoescape=True,  # every template, whatever its suffix
        finalize=shown_text,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = format_percent
    env.filters["num"] = format_number
    env.filters["tokens"] = format_tokens
    env.filters["duration"] = format_duration
    env.filters["json_script"] = json_script
    env.filters["usd"] = format_usd
    env.globals["table_rows"] = TableRows()
    return env


def templates_hash(templates_dir: Path) -> str:
    """One hash over every template and the site code: an edit to either re-renders every page (templates
    include each other, and the code decides what they are given)."""
    return code_hash(Path(templates_dir), Path(__file__).parent)


def code_hash(*folders: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and path.suffix != ".pyc":
                h.update(str(path.relative_to(folder)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def render_page(env: jinja2.Environment, page: Page, extra: dict[str, Any] | None = None) -> str:
    extra = extra or {}
    try:
        template = env.get_template(page.template)
    except jinja2.TemplateSyntaxError as exc:
        raise KernelBenchError(
            f"template error: {exc.message}",
            path=exc.filename,
            line=exc.lineno,
            hint="fix the template; the previous site stays in place",
        ) from None
    context = page.context(page, extra) if page.context else {}
    return template.render(page=page, url=page.href, **extra, **context)


# ------------------------------------------------------------------------------------------------ runs tables

# What a runs table's row shows of its run view (templates/_macros.html, `run_row`): the row's HTML is these values',
# the page's folder's (its links are relative to it) and the column choice's alone
ROW_FIELDS = ("run_id", "url", "agent", "agent_url", "scripted", "problem", "problem_url", "gpu", "status", "verdict",
              "unaudited", "peak_fraction", "outcome", "elapsed_s", "tokens_total", "cost_usd", "cost_is_estimate")
_PLAIN = frozenset({str, int, float, bool, type(None)})  # types marshal writes exactly, each with a code of its own
TABLE_ROWS_FILE = "table-rows.marshal"


def _row_key(view: Any) -> bytes | None:
    """The exact bytes of what a row shows (marshal's version 2 writes no back-references, so equal values give
    equal bytes; a float is written bit for bit, True apart from 1); None where a value is of another type (its
    row is rendered every time)."""
    if type(view) is not dict:
        return None
    try:
        values = tuple([view[name] for name in ROW_FIELDS])
    except KeyError:
        return None
    plain = _PLAIN
    for value in values:
        if type(value) not in plain:
            return None
    return marshal.dumps(values, 2)


class TableRows:
    """The rows of the runs tables (the runs index lists every run; each problem and agent page its own), each
    rendered through the `run_row` macro and kept, keyed by the exact values it shows (`_row_key`), so that a
    rebuild renders only the rows whose values changed and joins the rest as they were rendered. A command's
    build takes the previous build's rows from its output folder (`load`) and leaves its own for the next (`save`);
    a watching build keeps them in its environment. Rows are kept under their table's kind (the page's folder and
    the columns shown) and their run, one row each: a row rendered again replaces its run's old one."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, bool, bool], dict[Any, tuple[bytes, str]]] = {}
        self.rendered = 0  # rows rendered through the macro (not reused) since made
        self.changed = False  # since loaded or saved

    def __call__(self, row_macro: Any, runs: Any, url: Any, show_agent: Any = True, show_problem: Any = True) -> Markup:
        owner = getattr(url, "__self__", None)
        if not (isinstance(owner, Page) and getattr(url, "__func__", None) is Page.href):  # links made otherwise
            self.rendered += len(runs)
            return Markup("".join([str(row_macro(r, url, show_agent, show_problem)) for r in runs]))
        table = self.tables.setdefault((posixpath.dirname(owner.url), bool(show_agent), bool(show_problem)), {})
        parts = []
        for r in runs:
            key = _row_key(r)
            kept = table.get(r["run_id"]) if key is not None else None
            if kept is not None and kept[0] == key:
                parts.append(kept[1])
                continue
            html = str(row_macro(r, url, show_agent, show_problem))
            self.rendered += 1
            if key is not None:
                table[r["run_id"]] = (key, html)
                self.changed = True
            parts.append(html)
        return Markup("".join(parts))

    def load(self, path: Path, version: str) -> None:
        """The rows a previous build kept (`save`), if it kept them with this code and these templates."""
        try:
            saved = marshal.loads(Path(path).read_bytes())  # the build's own output, never an input
            tables = saved["tables"] if saved["version"] == version else {}
            if not isinstance(tables, dict):
                tables = {}
        except Exception:  # noqa: BLE001 - rows that cannot be read are rendered again
            tables = {}
        self.tables, self.changed = tables, False

    def keep_only(self, run_ids: Any) -> None:
        """Drop the rows of runs no longer in the deck."""
        for table in self.tables.values():
            gone = [run_id for run_id in table if run_id not in run_ids]
            for run_id in gone:
                del table[run_id]
            self.changed = self.changed or bool(gone)

    def save(self, path: Path, version: str) -> None:
        """Write the rows for the next build, unless they are the ones loaded (the previous site's file, linked
        into the staging folder, is then already right)."""
        path = Path(path)
        if not self.changed and path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a hard link into the previous site: replace it, never write through it
        path.write_bytes(marshal.dumps({"version": version, "tables": self.tables}))
        self.changed = False


def table_rows_version(tpl_hash: str) -> str:
    """What kept rows are valid for: the templates and site code (`templates_hash`, what a page's fingerprint takes
    them by) and the text shown escaped (`kernelbench.text`, outside the site code)."""
    from kernelbench import text

    h = hashlib.blake2b(digest_size=16)
    h.update(tpl_hash.encode())
    h.update(Path(text.__file__).read_bytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ filters


def shown_text(value: Any) -> Any:
    """Every text a template prints from the data: a bidi override or zero-width character in a name is shown
    escaped (`kernelbench.text`), so two names that differ read differently. HTML built by our own code
    (Markup: highlighted files, the transcript viewer, rendered writeups) is left as it is."""
    if type(value) is str or (isinstance(value, str) and not isinstance(value, Markup)):
        return visible(value, lines=True)
    return value


def json_script(value: Any) -> Markup:
    """JSON safe to place inside <script type="application/json">: no '<', '>' or '&' survive literally,
    so no string in the data can close the script element."""
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def format_percent(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{100 * value:.{digits}f}%"


def format_number(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def format_tokens(value: int | None) -> str:
    if not value:
        return "—"
    if value >= 1_000_000:
        return f"{value / 1e6:.2f}M"
    if value >= 1_000:
        return f"{value / 1e3:.1f}k"
    return str(value)


def format_usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.2f}"


def format_duration(seconds: float | None) -> str:
    if seconds is None or not 0 <= seconds < float("inf"):
        return "—"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
