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
plain name that is a regular file needs one `lstat` and no resolving.

A folder read again by its path can be swapped between the check and the read. A run folder is therefore opened
once (`Folder`): one path component at a time without following a link, and every file in it is opened relative
to that descriptor the same way, so nothing swapped in afterwards can be read; a link inside the folder that stays
inside it is read and walked, never followed by the kernel. A reader that opens files itself (the transcript
parser, which also lists the logs beside its file) is handed the file's folder through a descriptor and the file's
checked name in it (`Folder.path_for_reader`): no folder on the way can be swapped under it, and the reader opens
that name without following a link. A single file read by path opens without following a link and without waiting, and
checks its type again on the open descriptor.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import weakref
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
PROBLEM = Kind("problem file", 1 * MiB)  # each file of a problem folder's top level
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


def check_size(path: Path, kind: Kind, shown: Path | None = None) -> None:
    """Refuse a file (already located) larger than `kind`'s cap, for readers that open it themselves; `shown`
    is where reports say it is, when `path` reaches it another way."""
    size = os.stat(path).st_size
    if size > kind.max_bytes:
        raise _refused(shown or path, f"is {_mib(size)}, over the {_mib(kind.max_bytes)} a {kind.name} may hold; not read",
                       f"a {kind.name} this large is not one the project writes: check how it was made")


def _read_capped(path: Path, cap: int, whole: bool = False) -> tuple[bytes, int]:
    """The first `cap` bytes and the file's size (`whole`: nothing is read from a file larger than `cap`)."""
    # O_NONBLOCK: should the file have been swapped for a FIFO since it was examined, the open does not wait
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    return _read_fd(fd, path, cap, whole)


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


# ------------------------------------------------------------------------------------------------ folders


MAX_LINK_HOPS = 40  # the kernel's own limit on links followed in one path


class Folder:
    """A folder opened once, whose files are all read through its descriptor.

    A folder checked by its path and read again by its path later can be swapped in between (for a link to a
    folder outside the data folder, say): the build would read whatever is there then. Once opened here, every
    file is opened relative to the descriptor one component at a time without following a link, so what is
    read is always inside the folder that was opened. Links inside the folder that stay inside it are followed
    by reading them and walking their target in the same way. `changed()` tells whether the path now names
    another folder, so the build can say that it showed the folder as it was when opened.
    """

    def __init__(self, fd: int, path: Path, real: Path):
        self.fd, self.path, self.real = fd, Path(path), Path(real)
        self.real_text = str(self.real)
        self.identity = _identity(os.fstat(fd))
        self._held: list[int] = []  # subfolders opened for readers (path_for_reader), closed with the folder
        self._closer = weakref.finalize(self, _close_all, [fd], self._held)

    @classmethod
    def open(cls, path: Path, root: Path) -> Folder | None:
        """The folder at `path` (a link to a folder inside `root` is followed), opened without following any
        further link; None when nothing is there. Raises InputRefused as `locate` does, and when a part of the
        path is swapped for a link between the check and the open."""
        real = locate(path, root, folder=True)
        if real is None:
            return None
        return cls(_open_beneath(Path(root), real, path), path, real)

    @classmethod
    def open_child(cls, parent: Folder, name: str, root: Path) -> Folder | None:
        """The subfolder `name` of an opened folder, opened relative to its descriptor without following a link
        (no path is resolved again: a folder of ten thousand runs opens each run with one system call). A name
        that is a link, or that changed since it was listed, is opened as `open` does, with its checks and
        reports."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent.fd)
        except OSError:
            return cls.open(parent.path / name, root)
        return cls(fd, parent.path / name, parent.real / name)

    @classmethod
    def open_path(cls, path: Path) -> Folder:
        """A folder the caller trusts by its path (one it was handed, not one found in the data)."""
        real = Path(os.path.realpath(path))
        return cls(os.open(real, _DIR_FLAGS), path, real)

    @classmethod
    def reopen(cls, path: Path, real: str, identity: tuple[int, int]) -> Folder | None:
        """The folder another process opened (`identity`: its device and inode), opened again in this one by
        its real path, and taken only when the descriptor is that very folder; None otherwise (moved, swapped,
        removed, or a part of the path swapped for a link). The process that opened it holds its descriptor
        open for the whole build, so no other folder can take its inode meanwhile: the same identity is the
        same folder, whichever way the path led to it, and every file is then read through the descriptor."""
        try:
            fd = os.open(real, _DIR_FLAGS)
        except OSError:
            return None
        try:
            same = _identity(os.fstat(fd)) == tuple(identity)
        except OSError:
            same = False
        if not same:
            os.close(fd)
            return None
        return cls(fd, path, Path(real))

    def close(self) -> None:
        self._closer()

    def changed(self) -> bool:
        """Whether the folder's path no longer names the folder that was opened (swapped, moved or removed)."""
        try:
            return _identity(os.stat(self.path)) != self.identity
        except OSError:
            return True

    def changed_report(self) -> InputRefused | None:
        """What to tell when the folder changed since it was opened (None when it did not)."""
        if not self.changed():
            return None
        return _refused(self.path, "changed while the site was being built (swapped, moved or removed); its "
                        "page shows the folder as it was when the build opened it",
                        "build again once nothing is writing to the data folder")

    def shown(self, name: str) -> Path:
        """Where a file of the folder is said to be, in diagnostics and on pages."""
        return self.real / name

    def resolve(self, name: str) -> str | None:
        """`name` (a relative path) with every link inside the folder followed; None when nothing is there.

        Raises InputRefused for a name or link leading outside the folder, a loop of links, or a type other
        than a regular file."""
        shown = self.shown(name)
        done: list[str] = []
        parts, hops = _relative_parts(name, self), 0
        while parts:
            part = parts.pop(0)
            parent = _walk(self.fd, done, shown)
            try:
                mode = os.lstat(part, dir_fd=parent).st_mode
                target = os.readlink(part, dir_fd=parent) if stat.S_ISLNK(mode) else None
            except (FileNotFoundError, NotADirectoryError):
                return None
            finally:
                if parent != self.fd:
                    os.close(parent)
            if target is not None:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise _refused(shown, "is a loop of symbolic links", "remove the link")
                parts, done = _relative_parts(target, self, base=done, link=shown) + parts, []
            elif parts and not stat.S_ISDIR(mode):
                return None
            else:
                done.append(part)
        if not stat.S_ISREG(mode):
            raise _refused(shown, f"is {type_name(mode)}, not a regular file; refused without opening it",
                           "replace it with a regular file, or remove it")
        return "/".join(done)

    def open_file(self, name: str) -> tuple[int, Path] | None:
        """A descriptor of the regular file `name` (links inside the folder followed) and where it is shown;
        None when nothing is there. The caller closes the descriptor."""
        found = self.resolve(name)
        if found is None:
            return None
        shown = self.shown(found)
        *folders, last = found.split("/")
        parent = _walk(self.fd, folders, shown)
        try:
            fd = os.open(last, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=parent)
        except OSError as exc:
            raise _swapped(shown, exc) from None
        finally:
            if parent != self.fd:
                os.close(parent)
        return fd, shown

    def read_bytes(self, name: str, kind: Kind) -> bytes | None:
        """The whole file, refused when over `kind`'s cap; None when it is not there."""
        found = self.read_with_status(name, kind)
        return None if found is None else found[0]

    def read_with_status(self, name: str, kind: Kind) -> tuple[bytes, os.stat_result] | None:
        """`read_bytes`, and the status of the open file taken before it was read: what a cache records, so that
        a later write (which changes the file's ctime) is seen."""
        opened = self.open_file(name)
        if opened is None:
            return None
        data, size, info = _read_fd_status(opened[0], opened[1], kind.max_bytes, whole=True)
        if size > kind.max_bytes:
            raise _refused(opened[1], f"is {_mib(size)}, over the {_mib(kind.max_bytes)} a {kind.name} may hold; "
                           "not read", f"a {kind.name} this large is not one the project writes: check how it "
                           "was made")
        return data, info

    def plain_status(self, name: str) -> os.stat_result | None | NotPlain:
        """The status of `name`, a plain file name of this folder (no '/'), taken relative to the opened folder
        without following a link; None when nothing is there. NOT_PLAIN for any other name, and for a name whose
        status cannot be taken: its callers then go through `resolve` and `open_file`, which check and report.
        A status read here is evidence that a file is unchanged, never a licence to read it by its path."""
        if not _PLAIN_NAME(name):
            return NOT_PLAIN
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return NOT_PLAIN

    def plain_shown(self, name: str) -> str:
        """`str(self.shown(name))` for a plain name (one `plain_status` took), without building a Path."""
        return os.path.join(self.real_text, name)

    def read_head(self, name: str, kind: Kind = SHOWN) -> tuple[bytes, int] | None:
        """The file's first `kind.max_bytes` bytes and its whole size; None when it is not there."""
        opened = self.open_file(name)
        return None if opened is None else _read_fd(opened[0], opened[1], kind.max_bytes)

    def path_for_reader(self, name: str) -> Path | None:
        """A path naming the file `name` through the opened folder, for a reader that opens files itself (the
        transcript parser, which also looks for logs beside it): `/proc/self/fd/<fd>/<file>`, where `<fd>` is
        the file's own folder, opened here one part at a time without following a link and held until this
        folder is closed, so no folder on the way can be swapped for a link; the reader opens the file itself
        without following a link (kernelbench.transcripts.reader). None when nothing is there."""
        found = self.resolve(name)
        if found is None:
            return None
        if not Path(f"/proc/self/fd/{self.fd}").is_dir():  # no /proc: the folder's path is all there is
            return self.real / found
        *folders, last = found.split("/")
        parent = self.fd
        if folders:
            parent = _walk(self.fd, folders, self.shown(found))
            self._held.append(parent)
        return Path(f"/proc/self/fd/{parent}") / last


def _close_all(*groups: list[int]) -> None:
    for group in groups:
        for fd in group:
            try:
                os.close(fd)
            except OSError:
                pass
        group.clear()


def allow_open_folders(count: int) -> None:
    """Let the process hold `count` folders open at once (and a margin for the files read meanwhile): each run
    folder stays open for the whole build. The soft limit is raised toward the hard one, never past it."""
    try:
        import resource
    except ImportError:  # not POSIX: nothing to raise
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard),
                                                    hard))


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


class NotPlain:
    """What `Folder.plain_status` answers for a name it does not take: go the checked way."""

    def __repr__(self) -> str:
        return "NOT_PLAIN"


NOT_PLAIN = NotPlain()
# a file name of the folder itself: no separator, no NUL, not '.' or '..'
_PLAIN_NAME = re.compile(r"(?!\.\.?\Z)[^/\x00]+\Z").match


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _relative_parts(name: str, folder: Folder, base: list[str] | None = None, link: Path | None = None) -> list[str]:
    """`name` as parts relative to the folder ('..' applied), refusing any that leads outside it."""
    shown = link or folder.shown(name)
    if name in ("", ".") or "\x00" in name:
        raise InputRefused(f"'{name}' is not a file name inside the folder", path=folder.path,
                           hint="name a file of the folder, as a relative path without '..'")
    if name.startswith("/"):
        if not Path(name).is_relative_to(folder.real):
            raise _refused(shown, f"is a symbolic link to {name}, outside {folder.real}; not read",
                           f"the build reads nothing outside {folder.real}: copy the file in instead of linking it")
        name, base = str(Path(name).relative_to(folder.real)), []
    parts = list(base or [])
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise _refused(shown, f"'{name}' leads outside {folder.real}; not read",
                               "the build reads nothing outside the folder: name a file inside it")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise _refused(shown, f"'{name}' names the folder itself, not a file", "name a file of the folder")
    return parts


def _walk(fd: int, parts: list[str], shown: Path) -> int:
    """A descriptor of the subfolder `parts` below `fd`, opened one part at a time without following links."""
    current = fd
    for part in parts:
        if not part:
            continue
        try:
            following = os.open(part, _DIR_FLAGS, dir_fd=current)
        except OSError as exc:
            raise _swapped(shown, exc) from None
        finally:
            if current != fd:
                os.close(current)
        current = following
    return current


def _open_beneath(root: Path, real: Path, shown: Path) -> int:
    """`real` (a resolved folder inside the resolved `root`) opened one part at a time from `root`."""
    root = Path(os.path.realpath(root))
    top = os.open(root, _DIR_FLAGS)
    try:
        return _walk(top, list(real.relative_to(root).parts), shown) if real != root else os.dup(top)
    finally:
        os.close(top)


def _swapped(path: Path, exc: OSError) -> InputRefused:
    return _refused(path, f"changed while the site was being built ({exc.strerror}); not read",
                    "build again once nothing is writing to the data folder")


def _read_fd(fd: int, path: Path, cap: int, whole: bool = False) -> tuple[bytes, int]:
    """The first `cap` bytes of the open file `fd` (closed here) and its size; `path` names it in reports."""
    data, size, _ = _read_fd_status(fd, path, cap, whole)
    return data, size


def _read_fd_status(fd: int, path: Path, cap: int, whole: bool = False) -> tuple[bytes, int, os.stat_result]:
    """`_read_fd`, and the file's status taken on the open descriptor before reading."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(path, f"is {type_name(info.st_mode)}, not a regular file; refused",
                           "replace it with a regular file, or remove it")
        if whole and info.st_size > cap:
            return b"", info.st_size, info
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
    return data[:cap], max(info.st_size, len(data)), info
