"""The build manifest: which page was rendered from which inputs, kept in the output directory.

A page is re-rendered only when the content hash of its inputs changed (never by modification time). File
contents are hashed once and cached under their (size, mtime, inode) like git's index does, so an unchanged
200 KB transcript is not re-read on every rebuild. As in git, a signature is trusted only for files last
modified before the previous build began ("racily clean" files are hashed again): a file rewritten within the
file system's timestamp granularity of being hashed keeps size and mtime, and would otherwise be missed. What
remains undetected is an edit that deliberately restores an older mtime (to the nanosecond) at equal size and
inode; delete the output folder to rebuild from scratch after such tampering. Results, annotations, writeups
and problem files do not depend on this: they are always hashed by content (results.dataset.ParseCache).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kernelbench import inputs
from kernelbench.errors import KernelBenchError

MANIFEST_NAME = ".kernelbench-manifest.json"
MAX_HASHED_BYTES = max(kind.max_bytes for kind in inputs.CAPS)  # a larger input is refused, never read whole
MANIFEST_VERSION = 1


def hash_data(data: Any) -> str:
    """A stable content hash of JSON-able data (keys sorted, so dict order never matters)."""
    try:
        blob = orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=_fallback)
    except TypeError:  # what orjson cannot encode (an integer beyond 64 bits): the slower encoder takes any
        blob = json.dumps(data, sort_keys=True, default=_fallback).encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def _fallback(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return repr(value)


@dataclass
class Manifest:
    pages: dict[str, list] = field(default_factory=dict)  # url -> [inputs hash, diagnostics]
    static: dict[str, str] = field(default_factory=dict)  # url -> content hash
    file_hashes: dict[str, list] = field(default_factory=dict)  # path -> [size, mtime_ns, inode, hash]
    started_ns: int = 0  # wall clock when that build began hashing (signatures are trusted before it)
    rendered: int = 0  # pages rendered by this build (not stored)

    @classmethod
    def load(cls, out_dir: Path) -> "Manifest":
        """The previous build's manifest, or an empty one (anything unreadable means: render everything)."""
        try:
            data = orjson.loads((Path(out_dir) / MANIFEST_NAME).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return cls()
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return cls()
        return cls(
            pages=data.get("pages", {}),
            static=data.get("static", {}),
            file_hashes=data.get("file_hashes", {}),
            started_ns=data.get("started_ns", 0),
        )

    def dump(self) -> bytes:
        return orjson.dumps(
            {
                "version": MANIFEST_VERSION,
                "pages": self.pages,
                "static": self.static,
                "file_hashes": self.file_hashes,
                "started_ns": self.started_ns,
            },
            option=orjson.OPT_SORT_KEYS,
        )


class FileHasher:
    """Content hashes of files, re-reading a file only when its stat signature changed."""

    # a margin for file systems whose timestamps lag the wall clock (coarse ticks, network file systems)
    RACY_MARGIN_NS = 2_000_000_000

    def __init__(self, cache: dict[str, list] | None = None, trusted_before_ns: int = 0):
        self.previous = cache or {}
        self.seen: dict[str, list] = {}
        self.trusted_before_ns = trusted_before_ns - self.RACY_MARGIN_NS
        self.started_ns = time.time_ns()

    def __call__(self, path: Path | None, opener: Callable[[], tuple[int, Path] | None] | None = None) -> str | None:
        """The hash of the file at `path`; `opener` (a run folder's `open_file`) opens it instead of its path,
        so the file hashed is the one the page will show."""
        if path is None:
            return None
        key = str(path)
        if key in self.seen:
            return self.seen[key][3]
        if opener is not None:
            return self._hash_opened(key, opener)
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read forever: hash its type, never open it
            return f"not-a-file:{stat.S_IFMT(st.st_mode)}"
        return self._digest(key, st, lambda: hash_file(Path(path)))

    def _hash_opened(self, key: str, opener: Callable[[], tuple[int, Path] | None]) -> str | None:
        try:
            opened = opener()
        except (OSError, KernelBenchError):
            return None
        if opened is None:
            return None
        fd = opened[0]
        try:
            return self._digest(key, os.fstat(fd), lambda: hash_fd(fd))
        finally:
            os.close(fd)

    def _digest(self, key: str, st: os.stat_result, read: Callable[[], str]) -> str:
        signature = [st.st_size, st.st_mtime_ns, st.st_ino]
        cached = self.previous.get(key)
        if cached and cached[:3] == signature and st.st_mtime_ns < self.trusted_before_ns:
            digest = cached[3]
        elif st.st_size > MAX_HASHED_BYTES:  # refused by its reader anyway: not worth minutes of reading
            digest = "over-cap:" + ":".join(map(str, signature))
        else:
            digest = read()
        self.seen[key] = [*signature, digest]
        return digest


def hash_fd(fd: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def hash_file(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
