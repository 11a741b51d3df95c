"""Writeup pages: markdown (markdown-it-py, raw HTML off) with every mention of a known run linked to it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from markupsafe import Markup, escape

from kernelbench.sitegen import urls
from kernelbench.sitegen.pages import Page

if TYPE_CHECKING:  # imported where used: a rebuild that renders no writeup never loads markdown-it
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


def make_markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # "html": False makes any HTML in a writeup literal text; markdown-it also refuses javascript: links
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.add_render_rule("image", _image_from_the_site)
    return md


def _image_from_the_site(self, tokens, idx, options, env) -> str:
    """An image whose source is a file of the site, as an image; any other as a link to it. The site works
    offline and tells nobody who reads it: an image from elsewhere would be fetched by every reader's browser."""
    token = tokens[idx]
    source = token.attrGet("src") or ""
    if _on_the_site(source):
        return self.image(tokens, idx, options, env)
    alt = self.renderInlineAsText(token.children or [], options, env) or source
    return f'<a href="{escape(source)}" class="remote-image">image: {escape(alt)}</a>'


def _on_the_site(source: str) -> bool:
    """A relative path (no scheme, no host, not from the disk's root): resolved against the page, on the site."""
    parts = urlsplit(source)
    return bool(source) and not parts.scheme and not parts.netloc and not source.startswith(("/", "\\"))


def writeup_pages(data) -> list[Page]:
    pages, summaries = [], []
    for writeup in data.dataset.writeups:
        meta = writeup.meta
        view = {
            "slug": writeup.slug,
            "url": urls.writeup_url(writeup.slug),
            "title": meta.title,
            "verdict": meta.verdict.value,
            "problem": meta.problem,
            "problem_url": urls.problem_url(meta.problem) if meta.problem else None,
            "author": meta.author,
            "date": meta.date,
            "runs": [{"run_id": r, "url": urls.run_url(r) if r in data.runs else None} for r in meta.runs],
        }
        summaries.append({k: view[k] for k in ("title", "url", "verdict", "problem")})
        inputs = {"writeup": view, "body": writeup.body, "known_runs": sorted(data.runs)}
        pages.append(
            Page(
                view["url"],
                "writeup.html",
                meta.title,
                inputs,
                sources=(data.shown_path(writeup.path),),
                context=_writeup_context(view, writeup.body, set(data.runs)),
                kind="writeup",
            )
        )
    inputs = {"writeups": summaries}
    return [
        Page(
            urls.WRITEUPS_INDEX,
            "writeups.html",
            "Writeups",
            inputs,
            context=lambda p, e: inputs,
            kind="index",
        ),
        *pages,
    ]


def _writeup_context(view: dict, body: str, known_runs: set[str]):
    def context(page: Page, extra: dict) -> dict:
        html = render_markdown(
            body, lambda run_id: page.href(urls.run_url(run_id)) if run_id in known_runs else None
        )
        return {"writeup": {**view, "html": html}}

    return context


_RUN_ID = re.compile(r"\b\d{8}_\d{6}_[A-Za-z0-9_.\-]+")


def render_markdown(text: str, run_href) -> Markup:
    """Markdown to HTML; run ids mentioned in text become links to their run pages."""
    md = make_markdown()
    tokens = md.parse(text)
    for token in tokens:
        if token.type == "inline" and token.children:
            token.children = _link_runs(token.children, run_href)
    return Markup(md.renderer.render(tokens, md.options, {}))


def _link_runs(children: list[Token], run_href) -> list[Token]:
    out: list[Token] = []
    in_link = 0
    for tok in children:
        in_link += tok.type == "link_open"
        in_link -= tok.type == "link_close"
        if tok.type in ("text", "code_inline") and not in_link:
            out.extend(_split_text(tok, run_href))
        else:
            out.append(tok)
    return out


def _split_text(tok: Token, run_href) -> list[Token]:
    from markdown_it.token import Token

    pieces, last = [], 0
    for match in _RUN_ID.finditer(tok.content):
        run_id = match.group(0).rstrip("._-")  # a run id ending a sentence keeps its full stop outside
        href = run_href(run_id)
        if href is None:
            continue
        if match.start() > last:
            pieces.append(_like(tok, tok.content[last : match.start()]))
        link = Token("link_open", "a", 1)
        link.attrs = {"href": href}
        pieces += [link, _like(tok, run_id), Token("link_close", "a", -1)]
        last = match.start() + len(run_id)
    if not pieces:
        return [tok]
    if last < len(tok.content):
        pieces.append(_like(tok, tok.content[last:]))
    return pieces


def _like(tok: Token, content: str) -> Token:
    from markdown_it.token import Token

    new = Token(tok.type, tok.tag, tok.nesting, markup=tok.markup)
    new.content = content
    return new
