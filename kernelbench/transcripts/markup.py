"""Views (see `render.py`) → HTML, for the first screen of the viewer, which is in the page itself.

Every text of a view is escaped here; class names are the constants render.py wrote. Code is highlighted with
pygments (multi-line shell scripts) and diffs are marked up line by line with pygments' classes. The page builds
the same elements from the views of later chunks (`static/transcript.js`, `renderItem`); the browser tests compare
the two.
"""

from __future__ import annotations

from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer

from kernelbench.transcripts.render import View, esc
from kernelbench.transcripts.render import esc_text as _esc_text

_FORMATTER = HtmlFormatter(nowrap=True)
_BASH = BashLexer(ensurenl=False, stripnl=False)      # the text as it is, as the page shows it in chunks


def esc_text(text: str) -> str:
    """Element content escaped, carriage returns included: the HTML parser turns a literal one into a line feed,
    a character reference keeps it (the page's chunks hold the text as it is)."""
    html = _esc_text(text)
    return html.replace("\r", "&#13;") if "\r" in html else html


def items_html(items: list[View]) -> str:
    return "".join(item_html(item) for item in items)


def item_html(item: View) -> str:
    if "T" in item:
        number = item["T"]
        return (f'<div class="kbt-turn" id="t-{number}"><strong>Turn {number}</strong> · '
                f'{parts_html(item["s"], " · ")}</div>')
    return event_html(item)


def event_html(view: View) -> str:
    # the class list is made of render.py's constants only (never transcript text): written as it is
    ident, label, cls = view["i"], esc_text(view["k"]), view["c"]
    tail = (parts_html(view["g"]) if "g" in view else "") + (f'<a class="kbt-a" href="#e-{ident}" '
                                                             f'title="link to this event">#{ident}</a>')
    form = view["f"]
    if form == "b":
        return (f'<div class="{cls}" id="e-{ident}"><div class="kbt-h"><span class="kbt-k">{label}'
                f'</span>{tail}</div>{bodies_html(view)}</div>')
    summary = parts_html(view.get("s", ""))
    if form == "l":
        return (f'<div class="{cls}" id="e-{ident}"><span class="kbt-k">{label}</span> '
                f'<span class="kbt-s">{summary}</span>{tail}</div>')
    inner = bodies_html(view)
    if "e" in view:
        inner += f'<div class="kbt-sub">{items_html(view["e"])}</div>'
    return (f'<details class="{cls}" id="e-{ident}"{" open" if view.get("o") else ""}><summary>'
            f'<span class="kbt-k">{label}</span> <span class="kbt-s">{summary}</span>{tail}</summary>{inner}'
            f'</details>')


def parts_html(parts: Any, separator: str = "") -> str:
    """A text, or a list of texts and [class, text(, title)] spans."""
    if isinstance(parts, str):
        return esc_text(parts)
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(esc_text(part))
        else:
            cls = f' class="{part[0]}"' if part[0] else ""      # a constant of render.py
            title = f' title="{esc(part[2])}"' if len(part) > 2 else ""
            out.append(f"<span{cls}{title}>{esc_text(part[1])}</span>")
    return separator.join(out)


def bodies_html(view: View) -> str:
    return "".join(body_html(*spec) for spec in view.get("b") or ())


def body_html(css: str, text: str, lexer: str | None, blob: str | None, more: str | None) -> str:
    if lexer == "diff":
        inner, css = diff_lines(text), css + " hl"
    elif lexer == "bash":
        inner, css = _highlighted(text), css + " hl"
    else:
        inner = esc_text(text)
    if inner.startswith("\n"):
        inner = "\n" + inner              # the HTML parser drops one line end right after <pre>
    button = ""
    if blob is not None:
        css += " is-cut"
        button = f'<button type="button" class="kbt-more-text" data-blob="{esc(blob)}">{esc_text(more or "")}</button>'
    return (f'<div class="kbt-body"><button type="button" class="kbt-copy" title="copy">copy</button>'
            f'<pre class="{css}">{inner}</pre>{button}</div>')   # css: render.py's constants


def _highlighted(text: str) -> str:
    html = highlight(text, _BASH, _FORMATTER)
    # the formatter ends its output with a line end whether the text had one or not
    return html[:-1] if html.endswith("\n") and not text.endswith("\n") else html


DIFF_CLASSES = {"+": "gi", "-": "gd", "@": "gu", "I": "gh"}   # by first character; headers checked apart


def diff_lines(text: str) -> str:
    """A diff marked up line by line with the token classes pygments' DiffLexer gives the same lines (it is a
    line classifier too), styled by the same pygments stylesheet; pygments' own formatter costs about 2 ms per
    diff. Escaping first keeps each line's first character (+ - @) as it was. transcript.js `colorDiff` does the
    same for diffs of later chunks."""
    out = []
    for line in esc_text(text).split("\n"):
        cls = DIFF_CLASSES.get(line[:1])
        if cls == "gi" and line.startswith("+++ ") or cls == "gd" and line.startswith("--- "):
            cls = "gh"
        elif cls == "gu" and not line.startswith("@@") or cls == "gh" and not line.startswith("Index: "):
            cls = None
        out.append(f'<span class="{cls}">{line}</span>' if cls else line)
    return "\n".join(out)
