"""Jinja2 rendering: one environment per build, autoescaping on, links made relative to the page."""

from __future__ import annotations

import hashlib
import math
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
