"""Text from the data shown to a person: characters that would act instead of being read are shown escaped.

A name or a file name can carry terminal escapes (ESC sequences that recolour a terminal, fake a line of
output or retitle the window), other control characters, bidi overrides that reorder what is read, or
zero-width characters that make two different names read the same. Diagnostics and pages show each such
character as its escape (`\\x1b`, `\\u202e`, `\\u200b`), the way Python writes it, so what is read is what is
there. Everything else, every letter of every script included, is shown as it is.
"""

from __future__ import annotations

import unicodedata

# Cc: C0 and C1 controls (ESC among them); Cf: format characters (bidi controls, zero-width characters, the
# byte-order mark, soft hyphen, tag characters); and the line and paragraph separators (Zl, Zp).
_ACTING_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _acts(char: str) -> bool:
    return unicodedata.category(char) in _ACTING_CATEGORIES


class _Shown(dict):
    """How `visible` shows each character, by code point: a table for `str.translate`, filled as characters are
    first met (a page prints hundreds of thousands of texts, most of them a few characters long, and looking up
    each character's category in Python cost more than the rest of printing them). At most `MAX_KEPT` characters
    are kept: text of every script passes through unbounded."""

    MAX_KEPT = 1 << 16

    def __init__(self, keep: str):
        super().__init__()
        self.keep = keep

    def __missing__(self, code: int) -> str:
        char = chr(code)
        shown = _escape(char) if _acts(char) and char not in self.keep else char
        if len(self) < self.MAX_KEPT:
            self[code] = shown
        return shown


_SHOWN, _SHOWN_LINES = _Shown(""), _Shown("\t\n")


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every control, format (bidi, zero-width) or separator character shown as its escape;
    `lines` keeps tabs and line breaks (a log message of several lines), escaping the rest."""
    if text.isascii() and text.isprintable():  # the common case: nothing to escape, no new string
        return text
    return text.translate(_SHOWN_LINES if lines else _SHOWN)


def without_invisibles(text: str) -> str:
    """`text` without the characters `visible` escapes (what a reader sees when they are not escaped)."""
    if text.isascii() and text.isprintable():  # the common case: nothing to remove (as in `visible`)
        return text
    return "".join(c for c in text if not _acts(c))
