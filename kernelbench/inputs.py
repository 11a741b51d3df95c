"""The one door every untrusted input file comes through: where it may lie, what it may be, how big it may be.

Runs, annotations and writeups are written by agents, auditors and importers, so the build treats each file as
hostile. The policy, applied here and nowhere else:

- Where: a file is read only when its path, links followed, stays inside the folder it belongs to: the data
  folder for run folders, annotations and writeups; the run's own folder for a run's files (result.json, the
  transcript, solution.py, logs); the problems folder for problem files. A link that leads elsewhere, a loop of
  links or a link to nothing is refused and reported by name, never read and never silently called missing.
- What: only regular files (and folders where a folder is expected). FIFOs, sockets, devices are refused by
  their type from `stat`, before any `open` (opening a FIFO waits for a writer forever).
- How big: every kind of file has a cap (`Kind`); a larger file is refused before it is read, or, for files only
  shown on a page, read up to the cap and shown cut.

Files a reader finds beside its input (a transcript's subagent logs) pass the same checks (`sidecars`). Paths
handed in must be built from a resolved folder inside the root (the dataset resolves its data folder once), so a
plain name that is a regular file needs one `lstat` and no resolving. The inputs are files at rest: a file
swapped for another between its check and its read is not defended against beyond this: the read opens without
following a link and without waiting, and checks the type again on the open descriptor.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kernelbench.errors import KernelBenchError

MiB = 1 << 20


@dataclass(frozen=True)
class Kind:
    """A kind of input file and the most bytes the build reads of one."""

    name: str
    max_bytes: int


RESULT = Kind("result.json", 4 * MiB)
ANNOTATION = Kind("annotation", 1 * MiB)
WRITEUP = Kind("writeup", 1 * MiB)
PROBLEM = Kind("problem.yaml", 1 * MiB)
BASELINES = Kind("baselines file", 4 * MiB)
BASELINE_NOTES = Kind("baselines notes", 256 * 1024)
TRANSCRIPT = Kind("transcript", 128 * MiB)
SHOWN = Kind("file shown on a page", 1 * MiB)  # solution.py and logs: larger ones are shown cut, not refused
QUOTED = Kind("quoted file", 128 * MiB)  # the file an annotation quotes lines of (a transcript, say)
CAPS = (RESULT, ANNOTATION, WRITEUP, PROBLEM, BASELINES, BASELINE_NOTES, TRANSCRIPT, SHOWN, QUOTED)


class InputRefused(KernelBenchError):
    """An input the policy refuses: outside its folder, not a regular file, or over its cap."""


_TYPE_NAMES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def type_name(mode: int) -> str:
    for test, name in _TYPE_NAMES:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def locate(path: Path, root: Path, *, folder: bool = False) -> Path | None:
    """`path` (or, when it is a link, the file it leads to) if it may be read; None when nothing is there.

    `root` is the resolved folder the file must stay inside; `folder` asks for a folder instead of a file.
    Raises InputRefused for a link leading outside `root`, a loop, a dangling link or the wrong type.
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refused(path, f"cannot be examined: {exc.strerror}", "check the file's permissions") from None
    if stat.S_ISLNK(mode):
        path, mode = _follow(path, Path(root))
    wanted = stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)
    if not wanted:
        expected = "a folder" if folder else "a regular file"
        raise _refused(path, f"is {type_name(mode)}, not {expected}; refused without opening it",
                       f"replace it with {expected}, or remove it")
    return path


def _follow(link: Path, root: Path) -> tuple[Path, int]:
    target = Path(os.path.realpath(link))
    try:
        mode = os.stat(target).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(link, "is a loop of symbolic links", "remove the link") from None
        raise _refused(link, f"is a symbolic link to {target}, which does not exist",
                       "remove the link, or put the file itself there") from None
    if not target.is_relative_to(root):
        raise _refused(link, f"is a symbolic link to {target}, outside {root}; not read",
                       f"the build reads nothing outside {root}: copy the file in instead of linking it")
    return target, mode


def read_bytes(path: Path, root: Path, kind: Kind) -> bytes | None:
    """The whole file, checked by `locate` and refused when over `kind`'s cap; None when it is not there."""
    found = locate(path, root)
    if found is None:
        return None
    data, size = _read_capped(found, kind.max_bytes, whole=True)
    if size > kind.max_bytes:
        raise _refused(path, f"is {_mib(size)}, over the {_mib(kind.max_bytes)} a {kind.name} may hold; not read",
                       f"a {kind.name} this large is not one the project writes: check how it was made")
    return data


def read_head(path: Path, root: Path, kind: Kind = SHOWN) -> tuple[bytes, int] | None:
    """The file's first `kind.max_bytes` bytes and its whole size (for files shown cut); None when absent."""
    found = locate(path, root)
    if found is None:
        return None
    return _read_capped(found, kind.max_bytes)


def check_size(path: Path, kind: Kind) -> None:
    """Refuse a file (already located) larger than `kind`'s cap, for readers that open it themselves."""
    size = os.stat(path).st_size
    if size > kind.max_bytes:
        raise _refused(path, f"is {_mib(size)}, over the {_mib(kind.max_bytes)} a {kind.name} may hold; not read",
                       f"a {kind.name} this large is not one the project writes: check how it was made")


def _read_capped(path: Path, cap: int, whole: bool = False) -> tuple[bytes, int]:
    """The first `cap` bytes and the file's size (`whole`: nothing is read from a file larger than `cap`)."""
    # O_NONBLOCK: should the file have been swapped for a FIFO since it was examined, the open does not wait
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(path, f"is {type_name(info.st_mode)}, not a regular file; refused",
                           "replace it with a regular file, or remove it")
        if whole and info.st_size > cap:
            return b"", info.st_size
        chunks, left = [], min(info.st_size, cap) + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 22))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    size = max(info.st_size, len(data))
    return data[:cap], size


def _mib(size: int) -> str:
    return f"{size / MiB:.1f} MiB" if size >= MiB else f"{size} bytes"


def _refused(path: Path, message: str, hint: str) -> InputRefused:
    return InputRefused(message, path=path, hint=hint)


def sidecars(paths: list[Path], root: Path) -> tuple[list[Path], list[InputRefused]]:
    """Of the files a reader found beside its input (a transcript's subagent logs), those the policy lets it
    read inside `root` (the folder the input lies in), and why each other one is refused."""
    root = Path(os.path.realpath(root))
    allowed, refused = [], []
    for path in paths:
        try:
            found = locate(Path(os.path.realpath(path.parent)) / path.name, root)
        except InputRefused as exc:
            refused.append(exc)
            continue
        if found is not None and found.is_relative_to(root):
            allowed.append(path)
        elif found is not None:
            refused.append(_refused(path, f"lies outside {root}; not read", "keep subagent logs beside the log"))
    return allowed, refused
