"""The build manifest: which page was rendered from which inputs, kept in the output directory.

A page is re-rendered only when the content hash of its inputs changed (never by modification time). File
contents are hashed once and cached under their (size, mtime, ctime, inode, device) like git's index does, so an
unchanged 200 KB transcript is not re-read on every rebuild; a run's files are looked at through the run
folder's descriptor (`FileHasher.unchanged_in`), without being opened. As in git, a signature is trusted only
for files last changed before the previous build began ("racily clean" files are hashed again): a file rewritten
within the file system's timestamp granularity of being hashed keeps size and mtime, and would otherwise be
missed. An edit that deliberately restores an older mtime (to the nanosecond) at equal size and inode is still
seen: it moves the ctime, which no system call sets back. Annotations, writeups and problem files are always
hashed by content (results.dataset.ParseCache), result.json by the same status rule.

A run's file that no previous build recorded (a first build, a new run) is hashed by the worker that renders its
page (`Page.settle`), which reads the file anyway: such a page has no previous record to match, so it is rendered
whatever the hash, and the signature and hash the worker took go into this manifest as if planning had taken them.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kernelbench import inputs
from kernelbench.errors import KernelBenchError

MANIFEST_NAME = ".kernelbench-manifest.marshal"
LEGACY_MANIFEST_NAMES = (".kernelbench-manifest.json",)  # what earlier builds wrote: dropped from a site rebuilt
MAX_HASHED_BYTES = max(kind.max_bytes for kind in inputs.CAPS)  # a larger input is refused, never read whole
MANIFEST_VERSION = 3  # 3: marshal, the file records grouped by folder (FileRecords); 2: JSON


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


class FileRecords(Mapping[str, list]):
    """The files a build hashed: path -> [*signature, hash]. Kept grouped by the folder each file is in (the text of
    its path before the last "/"), each folder's records marshalled on their own, and decoded only when a path in
    that folder is looked up: a rebuild after one edit looks into one run folder, not at the 50,000 records of ten
    thousand runs (10 MB), and writes the other folders' bytes back as they came."""

    def __init__(self, groups: dict[str, bytes | dict[str, list]] | None = None):
        self._groups: dict[str, bytes | dict[str, list]] = groups if groups is not None else {}

    @classmethod
    def of(cls, records: Mapping[str, list]) -> FileRecords:
        groups: dict[str, bytes | dict[str, list]] = {}
        for key, value in records.items():
            group = groups.get(folder := key.rpartition("/")[0])
            if group is None:
                group = groups[folder] = {}
            group[key] = value  # type: ignore[index]
        return cls(groups)

    def _group(self, folder: str) -> dict[str, list] | None:
        group = self._groups.get(folder)
        if isinstance(group, bytes):
            group = self._groups[folder] = marshal.loads(group)  # the build's own output, never an input
        return group

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        group = self._group(key.rpartition("/")[0])
        return default if group is None else group.get(key, default)

    def __getitem__(self, key: str) -> list:
        group = self._group(key.rpartition("/")[0])
        if group is None:
            raise KeyError(key)
        return group[key]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        for folder in list(self._groups):
            yield from self._group(folder) or ()

    def __len__(self) -> int:
        return sum(len(self._group(folder) or ()) for folder in list(self._groups))

    def __bool__(self) -> bool:  # without decoding every folder, as __len__ would
        return any(self._groups.values())

    def replaced(self, dropped: Iterable[str], added: Mapping[str, list]) -> FileRecords:
        """These records less the paths `dropped`, with `added` over them; the folders neither touches are taken as
        they are (still marshalled), and these records are left as they were."""
        groups = dict(self._groups)
        copied: set[str] = set()

        def writable(folder: str) -> dict[str, list]:
            if folder not in copied:
                copied.add(folder)
                group = self._group(folder)
                groups[folder] = dict(group) if group is not None else {}
            return groups[folder]  # type: ignore[return-value]

        for key in dropped:
            folder = key.rpartition("/")[0]
            if folder in copied or self.get(key) is not None:
                writable(folder).pop(key, None)
        for key, value in added.items():
            writable(key.rpartition("/")[0])[key] = value
        return FileRecords(groups)

    def with_folders_of(self, other: FileRecords, folders: Iterable[str]) -> FileRecords:
        """These records with `other`'s records of the files in `folders` (still marshalled where `other` had not
        decoded them) under them: a path these records hold keeps its record here."""
        groups = dict(self._groups)
        for folder in folders:
            theirs = other._groups.get(folder)
            if not theirs:
                continue
            mine = self._group(folder)
            if mine is None:
                groups[folder] = theirs
            else:
                groups[folder] = {**other._group(folder), **mine}  # type: ignore[dict-item]
        return FileRecords(groups)

    def packed(self) -> dict[str, bytes]:
        """Each folder's records as marshalled bytes (a folder left with none dropped)."""
        return {folder: group if isinstance(group, bytes) else marshal.dumps(group)
                for folder, group in self._groups.items() if group}


@dataclass
class Manifest:
    pages: dict[str, list] = field(default_factory=dict)  # url -> [inputs hash, diagnostics]
    static: dict[str, str] = field(default_factory=dict)  # url -> content hash
    # path -> [*signature, hash]: a plain mapping where a build records them, FileRecords where they were loaded
    file_hashes: Mapping[str, list] = field(default_factory=dict)
    started_ns: int = 0  # wall clock when that build began hashing (signatures are trusted before it)
    rendered: int = 0  # pages rendered by this build (not stored)
    settled: dict[str, list] = field(default_factory=dict)  # files hashed where their pages were rendered (not stored)
    written: list[str] = field(default_factory=list)  # the pages this build rendered (not stored)

    @classmethod
    def load(cls, out_dir: Path) -> "Manifest":
        """The previous build's manifest, or an empty one (anything unreadable means: render everything). Kept with
        marshal, as the file-system record and the kept plan are: the build's own output, never an input."""
        try:
            data = marshal.loads((Path(out_dir) / MANIFEST_NAME).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return cls()
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return cls()
        try:
            return cls(
                pages=data["pages"],
                static=data["static"],
                file_hashes=FileRecords(data["files"]),
                started_ns=data["started_ns"],
            )
        except KeyError:
            return cls()

    def dump(self) -> bytes:
        records = self.file_hashes if isinstance(self.file_hashes, FileRecords) else FileRecords.of(self.file_hashes)
        return marshal.dumps(
            {
                "version": MANIFEST_VERSION,
                "pages": self.pages,
                "static": self.static,
                "files": records.packed(),
                "started_ns": self.started_ns,
            }
        )


class FileHasher:
    """Content hashes of files, re-reading a file only when its stat signature changed."""

    # a margin for file systems whose timestamps lag the wall clock (coarse ticks, network file systems)
    RACY_MARGIN_NS = 2_000_000_000

    def __init__(self, cache: Mapping[str, list] | None = None, trusted_before_ns: int = 0):
        self.previous = cache if cache is not None else {}  # a FileRecords decoded only where looked into
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
            return self.seen[key][-1]
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

    def read(self, path: Path | None, opener: Callable[[], tuple[int, Path] | None],
             cap: int) -> tuple[str | None, bytes | None]:
        """The hash of the file `opener` opens (as `self(path, opener)`), and its bytes when it is a regular file
        of at most `cap` bytes: read once, hashed and handed back, so that whoever shows the file shows the very
        bytes hashed and reads it no more. As for any file hashed, the signature recorded is the status taken on
        the open descriptor before the read: a file written meanwhile has another ctime by then, and the next
        build hashes it again. No bytes come back when none were read (a file the previous build hashed under
        the same signature, a larger one, one that grew past `cap` while read): the caller reads it itself."""
        if path is None:
            return None, None
        key = str(path)
        if key in self.seen:
            return self.seen[key][-1], None
        try:
            opened = opener()
        except (OSError, KernelBenchError):
            return None, None
        if opened is None:
            return None, None
        fd = opened[0]
        read: list[bytes] = []
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
                return self._digest(key, st, lambda: hash_fd(fd)), None
            digest = self._digest(key, st, lambda: _hash_read(fd, st.st_size, cap, read))
        finally:
            os.close(fd)
        return digest, read[0] if read and len(read[0]) <= cap else None

    def unchanged_in(self, folder: inputs.Folder, name: str,
                     status: os.stat_result | inputs.NotPlain | None = None) -> str | None | Unknown:
        """The hash of the file `name` of an opened run folder, taken from the previous build when its status,
        read relative to the folder's descriptor, is the one recorded then (nothing is opened); None when nothing
        is there; UNKNOWN when the file must be opened and hashed (a changed or racily clean file, a link, a name
        with a folder in it). `status`: the file's `folder.plain_status(name)`, when the caller has just taken it
        (a file not there: None, which takes it again)."""
        st = folder.plain_status(name) if status is None else status
        if st is None:
            return None
        if isinstance(st, inputs.NotPlain) or not stat.S_ISREG(st.st_mode):
            return UNKNOWN
        key = folder.plain_shown(name)
        if key in self.seen:
            return self.seen[key][-1]
        cached = self.previous.get(key)
        signature = _signature(st)
        if cached and cached[:-1] == signature and self._trusted(st):
            self.seen[key] = cached
            return cached[-1]
        return UNKNOWN

    def never_hashed(self, key: str) -> bool:
        """Whether the previous build recorded nothing of the file `key` (where it is shown: a first build, a new
        run): no page showing it can then match a previous one, and it may be hashed where its page is
        rendered."""
        return key not in self.previous

    def carry(self, key: str) -> bool:
        """Take the previous build's record of a file as this build's, for a caller that knows the file unchanged
        since (a watching build's file-system record); False when there is none."""
        cached = self.previous.get(key)
        if cached is None:
            return False
        self.seen[key] = cached
        return True

    def entry(self, key: str) -> list | None:
        """What this build recorded of a file (signature and hash), by the key it was hashed under."""
        return self.seen.get(key)

    def _trusted(self, st: os.stat_result) -> bool:
        return max(st.st_mtime_ns, st.st_ctime_ns) < self.trusted_before_ns

    def _digest(self, key: str, st: os.stat_result, read: Callable[[], str]) -> str:
        signature = _signature(st)
        cached = self.previous.get(key)
        if cached and cached[:-1] == signature and self._trusted(st):
            digest = cached[-1]
        elif st.st_size > MAX_HASHED_BYTES:  # refused by its reader anyway: not worth minutes of reading
            digest = "over-cap:" + ":".join(map(str, signature))
        else:
            digest = read()
        self.seen[key] = [*signature, digest]
        return digest


class Unknown:
    """What `FileHasher.unchanged_in` answers for a file it cannot vouch for without opening it."""


UNKNOWN = Unknown()


def _signature(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def hash_fd(fd: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def _hash_read(fd: int, size: int, cap: int, read: list[bytes]) -> str:
    """The hash of the open file `fd` read to its end (as `hash_fd`), its bytes put in `read` when they are at
    most `cap` (a file growing past it is hashed on without keeping them). `size`: the size its status gave, read
    at once (and one byte more, which sees a file still growing)."""
    chunks, held = [], 0
    h = hashlib.blake2b(digest_size=16)
    want = size + 1
    while chunk := os.read(fd, want):
        want = 1 << 16  # what a file still growing adds (a read of 1 MiB would map and unmap that much first)
        h.update(chunk)
        held += len(chunk)
        if held <= cap:
            chunks.append(chunk)
    if held <= cap:
        read.append(chunks[0] if len(chunks) == 1 else b"".join(chunks))
    return h.hexdigest()


def hash_file(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
