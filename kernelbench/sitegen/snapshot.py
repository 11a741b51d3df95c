"""The inputs of a build as the file system describes them, without opening a file: what lets a rebuild whose inputs
did not change end before it reads anything.

Before it reads an input, a build records the `lstat` of every entry under the folders it reads from (the data's
runs/, annotations/ and problems/, the templates, the static files, kernelbench's own code) and of the folders its
libraries are installed in, and keeps that record in the site it builds. The next build takes the same record; when
it equals the one kept, entry for entry, the site in place is what a full build would write again, and the build
stops there: no run file is opened, nothing is rendered, nothing is swapped (the previous build's report is given
again).

An entry is its type, device, inode, size, modification time and status-change time (ctime). The ctime is the
safety net: every write, rename, chmod or link count change sets it to the current time, and no system call sets it
back, so an edit that keeps the size and puts the old mtime back to the nanosecond is still seen. As in git's index,
a record is trusted only when every entry in it last changed well before the record was taken: a file written in the
same clock tick as the record could change again within that tick and keep every field. Anything the record cannot
vouch for ends the short cut and the build runs in full (which has its own, per-file checks): a symbolic link
anywhere (its target may lie outside the folders recorded), an entry that is neither a file nor a folder, a folder
that cannot be listed.

At ten thousand runs the record is 70,000 entries, a fifth of a second of `lstat`s: with a previous record that large
the data's part is taken by a forked process while the build imports what a rebuild after an edit needs (`take`).

Not seen: a library file edited in place inside an installed package (installing, upgrading or removing a package
changes its site-packages folder, which is recorded), and a change made while the system clock was set back.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import site
import stat
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SNAPSHOT_FILE = "inputs.snapshot"  # in the build cache folder of the site (buildcache.CACHE_DIR)
SNAPSHOT_VERSION = 2  # 2: the entries of a folder's names packed end to end
RACY_MARGIN_NS = 2_000_000_000  # file systems whose clocks lag the wall clock (coarse ticks, network mounts)
_PACKAGE = Path(__file__).resolve().parents[1]
_SKIPPED_IN_CODE = frozenset({"__pycache__"})  # compiled code changes whenever Python compiles; its source is recorded

Entry = tuple[int, int, int, int, int, int]  # st_mode, st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns
_CTIME = 5
# The entries of a folder's names are kept packed end to end, in the order of the names: a record of ten thousand
# runs is seventy thousand entries, which a rebuild reads, compares and writes in a fraction of the time as bytes
# than as tuples.
_PACKED = struct.Struct("<QQQqqq")
_PACKED_CTIME = 40  # where the ctime lies in a packed entry
_UNKNOWN = bytes(_PACKED.size)  # a name whose status could not be taken (the record is then not certain)
_S_IFMT, _S_IFDIR, _S_IFREG = 0o170000, stat.S_IFDIR, stat.S_IFREG
FORKED_RECORD_FOLDERS = 1_000  # folders of a previous record from which a forked process records the data


@dataclass
class Snapshot:
    """What the build's input folders held when it began (`take`), and whether that can vouch for them."""

    taken_ns: int
    context: tuple  # what else the site depends on: the folders given and the Python running the build
    tops: dict[str, Entry | None] = field(default_factory=dict)  # each root and library folder; None: not there
    # each folder walked: (its entry, the names in it, sorted, their entries packed in the same order, and the latest
    # ctime among them)
    folders: dict[str, tuple[Entry, tuple[str, ...], bytes, int]] = field(default_factory=dict)
    certain: bool = True  # False: something here cannot vouch for its contents (a link, a FIFO, an unlistable folder)
    newest_ns: int = 0  # the latest ctime of any entry (every change of a file or folder moves its ctime)
    # whether the site's files `take` was asked about (`site_asked`: the site folder and the very list) were all there
    # as the record was taken (None: not asked); neither is kept with the record
    site_complete: bool | None = None
    site_asked: tuple[str, list[str]] | None = field(default=None, compare=False, repr=False)

    def trusted(self) -> bool:
        """Whether every entry changed last before the record was taken, by more than the clock's tick."""
        return self.certain and self.newest_ns < self.taken_ns - RACY_MARGIN_NS

    def same_inputs(self, other: Snapshot) -> bool:
        return self.context == other.context and self.tops == other.tops and self.folders == other.folders

    def listing(self, folder: str, entry: Entry) -> tuple[str, ...] | None:
        """The names this record holds for `folder` when the folder's entry now is the one recorded and it
        changed last well before the record was taken: a folder's mtime and ctime move whenever a name is
        added to it, removed or renamed, so its names are the same and it need not be listed again."""
        kept = self.folders.get(folder)
        if kept is None or kept[0] != entry or entry[_CTIME] >= self.taken_ns - RACY_MARGIN_NS:
            return None
        return kept[1]


def take(data_roots: list[Path], code_roots: list[Path], context: tuple, previous: Snapshot | None = None,
         meanwhile: Callable[[], object] | None = None, site_files: tuple[Path, list[str]] | None = None) -> Snapshot:
    """Record every entry under `data_roots` and `code_roots` (compiled code skipped in the latter), the roots
    themselves and the library folders of this Python. A folder `previous` vouches for is not listed again:
    only its entries' status is taken. `site_files`: a site folder and the files its record names, each looked for
    as the record is taken (`Snapshot.site_complete`).

    With a previous record of many folders (ten thousand run folders are 70,000 `lstat`s, each a system call and a
    few microseconds of Python: a fifth of a second), the data roots are recorded by a forked process on another
    core (`_fork_record`) while this one records the code roots and runs `meanwhile` (what a rebuild after an edit
    imports); the child's record is merged into this one, the same entries whichever process took them. Where no
    process can be forked (no `fork`, or threads running: a watching build) or the child does not hand back a whole
    record, this process records the data roots itself; `meanwhile` is run only beside a child."""
    snapshot = Snapshot(taken_ns=time.time_ns(), context=context)
    if site_files is not None:
        snapshot.site_asked = (str(site_files[0]), site_files[1])

    def record_data(record: Snapshot) -> None:
        for root in data_roots:
            _record_tree(record, str(root), frozenset(), previous)

    child = None
    if previous is not None and len(previous.folders) >= FORKED_RECORD_FOLDERS:
        child = _fork_record(snapshot, record_data, previous)
    if child is None:
        record_data(snapshot)
    try:
        for root in code_roots:
            _record_tree(snapshot, str(root), _SKIPPED_IN_CODE, previous)
        for folder in library_folders():
            snapshot.tops[folder] = _entry(snapshot, folder)
        if child is not None and meanwhile is not None:
            meanwhile()
        if site_files is not None:  # here, not in the child: the child's share is the larger one
            snapshot.site_complete = _all_there(*site_files)
    except BaseException:
        if child is not None:  # interrupted: the child is ended, not left blocked on a pipe nobody reads
            _end_child(*child)
        raise
    if child is not None:
        found = _child_record(*child)
        if found is None:
            record_data(snapshot)
        else:
            tops, folders, certain, newest = found
            snapshot.tops.update(tops)
            kept = previous.folders  # type: ignore[union-attr]
            for path, record in folders.items():  # a folder recorded as the previous record has it came as None
                snapshot.folders[path] = kept[path] if record is None else record
            snapshot.certain = snapshot.certain and certain
            snapshot.newest_ns = max(snapshot.newest_ns, newest)
    return snapshot


def _all_there(site_dir: Path, files: list[str]) -> bool:
    prefix, lexists = f"{site_dir}/", os.path.lexists
    return all(lexists(prefix + name) for name in files)


def _fork_record(snapshot: Snapshot, record: Callable[[Snapshot], None],
                 previous: Snapshot) -> tuple[int, int] | None:
    """(pid, read end of its pipe) of a forked process that runs `record` on a record of its own and sends it back
    marshalled (`_child_record`), each folder whose record equals `previous`'s as None: the parent takes that one
    (at ten thousand runs the whole record is 6 MB, which costs more to send and decode than to take); None when
    no process could be forked."""
    if not _forkable():
        return None
    try:
        read, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the child: record, send, and leave without running anything of the parent's (atexit, buffers)
        status = 1
        try:
            os.close(read)
            own = Snapshot(taken_ns=snapshot.taken_ns, context=snapshot.context)
            record(own)
            kept = previous.folders
            folders = {path: None if kept.get(path) == found else found for path, found in own.folders.items()}
            blob = marshal.dumps((own.tops, folders, own.certain, own.newest_ns))
            with os.fdopen(write, "wb") as pipe:
                pipe.write(struct.pack("<Q", len(blob)))
                pipe.write(blob)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def _forkable() -> bool:
    """Whether this process may fork a child to record the data: it can fork, and runs no other thread (a watching
    build's watchers: a lock one of them holds would stay held in the child)."""
    threading = sys.modules.get("threading")
    return hasattr(os, "fork") and (threading is None or threading.active_count() == 1)


def _end_child(pid: int, read: int) -> None:
    os.close(read)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _child_record(pid: int, read: int) -> tuple | None:
    """What the child `pid` sent through `read` (tops, folders, certain, newest ctime); None unless it sent a whole
    record and exited cleanly."""
    try:
        with os.fdopen(read, "rb") as pipe:
            blob = pipe.read()
    except OSError:
        blob = b""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = -1
    if status != 0 or len(blob) < 8 or struct.unpack("<Q", blob[:8])[0] != len(blob) - 8:
        return None
    try:
        found = marshal.loads(blob[8:])  # written by this very code in the child
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(found, tuple) and len(found) == 4 and isinstance(found[1], dict)):
        return None
    return found


def library_folders() -> list[str]:
    """Where this Python's libraries are installed: installing, upgrading or removing one changes its folder."""
    folders = [*site.getsitepackages(), site.getusersitepackages()]
    return sorted({folder for folder in folders if os.path.isdir(folder)})


def _entry(snapshot: Snapshot, path: str) -> Entry | None:
    """The lstat of `path` as an entry (None when nothing is there), noting what the snapshot cannot vouch for."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        snapshot.certain = False
        return None
    return _noted(snapshot, info)


def _noted(snapshot: Snapshot, info: os.stat_result) -> Entry:
    entry = (info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    snapshot.newest_ns = max(snapshot.newest_ns, info.st_ctime_ns)
    kind = info.st_mode & _S_IFMT
    if kind != _S_IFREG and kind != _S_IFDIR:
        snapshot.certain = False
    return entry


def _record_tree(snapshot: Snapshot, root: str, skipped: frozenset[str], previous: Snapshot | None) -> None:
    """The root and everything below it, walked without following a link."""
    top = snapshot.tops[root] = _entry(snapshot, root)
    folders = [(root, top)] if top is not None and top[0] & _S_IFMT == _S_IFDIR else []
    while folders:
        folder, entry = folders.pop()
        known = previous.listing(folder, entry) if previous is not None else None
        if known is not None:  # the names are the record's: their statuses taken, the folders below noted
            snapshot.folders[folder] = (entry, known, *_statuses(snapshot, folder, known, folders))
            continue
        listed = _listed(snapshot, folder, skipped)
        if listed is None:  # not listed: not recorded either, so that no later build takes its names from here
            continue
        names, entries = listed
        packed = b"".join(_PACKED.pack(*child) for child in entries)
        snapshot.folders[folder] = (entry, names, packed, max((child[_CTIME] for child in entries), default=0))
        for name, child in zip(names, entries):
            if child[0] & _S_IFMT == _S_IFDIR:
                folders.append((f"{folder}/{name}", child))


def _listed(snapshot: Snapshot, folder: str, skipped: frozenset[str]) -> tuple[tuple, tuple] | None:
    """The names in `folder`, sorted, and their entries; None when it cannot be listed."""
    try:
        with os.scandir(folder) as listing:
            found = sorted((entry.name, _noted(snapshot, entry.stat(follow_symlinks=False)))
                           for entry in listing if entry.name not in skipped)
    except OSError:  # a folder that cannot be listed (or vanished while listed): its contents are unknown
        snapshot.certain = False
        return None
    return tuple(name for name, _ in found), tuple(entry for _, entry in found)


def _statuses(snapshot: Snapshot, folder: str, names: tuple[str, ...],
              below: list[tuple[str, Entry]]) -> tuple[bytes, int]:
    """The entries of names known to be in `folder`, packed, and the latest ctime among them; each folder among
    them is added to `below` (to be walked). A name gone since (a race with a removal) is uncertain. The loop most of
    a walk of ten thousand runs spends its time in, so it is written out (one lstat per name)."""
    packed: list[bytes] = []
    newest, lstat, pack = 0, os.lstat, _PACKED.pack
    for name in names:
        path = f"{folder}/{name}"
        try:
            info = lstat(path)
        except OSError:
            snapshot.certain = False
            packed.append(_UNKNOWN)
            continue
        ctime, mode = info.st_ctime_ns, info.st_mode
        packed.append(pack(mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, ctime))
        if ctime > newest:  # noqa: PLR1730 - a call to max() per entry costs more than the comparison
            newest = ctime
        kind = mode & _S_IFMT
        if kind == _S_IFDIR:
            below.append((path, (mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, ctime)))
        elif kind != _S_IFREG:
            snapshot.certain = False
    snapshot.newest_ns = max(snapshot.newest_ns, newest)
    return b"".join(packed), newest


def named_entries(record: tuple) -> dict[str, bytes]:
    """A folder's record as each name's packed entry."""
    size, packed = _PACKED.size, record[2]
    return {name: packed[i * size:(i + 1) * size] for i, name in enumerate(record[1])}


def named_entry(record: tuple, name: str) -> Entry | None:
    """The entry of one name in a folder's record (None: not there)."""
    names = record[1]
    try:
        at = names.index(name)
    except ValueError:
        return None
    return _PACKED.unpack_from(record[2], at * _PACKED.size)


def unpacked(packed: bytes) -> Entry:
    return _PACKED.unpack(packed)


def is_folder(entry: Entry) -> bool:
    return entry[0] & _S_IFMT == _S_IFDIR


def is_file(entry: Entry) -> bool:
    return entry[0] & _S_IFMT == _S_IFREG


def _ctime(packed: bytes) -> int:
    return int.from_bytes(packed[_PACKED_CTIME:], "little", signed=True)


def _is_file(packed: bytes) -> bool:
    return int.from_bytes(packed[:8], "little") & _S_IFMT == _S_IFREG


def code_changed(previous: Snapshot, now: Snapshot, roots: tuple[list[Path], list[Path]]) -> bool:
    """Whether anything the build runs on differs between the records: an entry below the code roots (templates,
    assets, the package), a library folder, the Python or the folders given (`roots`: input_roots' data and code
    roots). Entries only: a file written again with the same bytes counts as changed."""
    if previous.context != now.context:
        return True
    data = {str(root) for root in roots[0]}
    code = tuple(str(root) for root in roots[1])
    below = tuple(root + "/" for root in code)
    if any(previous.tops.get(top) != now.tops.get(top) for top in previous.tops.keys() | now.tops.keys()
           if top not in data):
        return True
    for records, other in ((previous.folders, now.folders), (now.folders, previous.folders)):
        for path, record in records.items():
            if (path in code or path.startswith(below)) and other.get(path) != record:
                return True
    return False


def unchanged_names(previous: Snapshot, now: Snapshot, folder: str) -> set[str]:
    """The names in `folder` whose entry, and every entry below it, is the same in both records and changed last
    well before `previous` was taken: what the build that took `previous` read of them is what they hold now (a
    change would have moved a ctime past that moment). Nothing when either record cannot vouch for its entries."""
    here, before = now.folders.get(folder), previous.folders.get(folder)
    if here is None or before is None or not (previous.certain and now.certain):
        return set()
    limit = previous.taken_ns - RACY_MARGIN_NS
    old = named_entries(before)
    names = {name for name, packed in named_entries(here).items() if _ctime(packed) < limit and old.get(name) == packed}
    prefix = folder + "/"
    changed = set()
    for path, record in now.folders.items():
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[0]
            if name in names and (previous.folders.get(path) != record or record[3] >= limit):
                changed.add(name)
    for path in previous.folders.keys() - now.folders.keys():
        if path.startswith(prefix):
            changed.add(path[len(prefix):].split("/", 1)[0])
    return names - changed


def edited_names(previous: Snapshot, now: Snapshot, runs_root: str, annotations_root: str
                 ) -> tuple[set[str], set[str]] | None:
    """What changed between two records when every change lies inside run folders that were there before or is an
    annotation file that was there before: (those run folders' names, those annotation files' names). None when
    anything else changed (a run folder or an annotation added, removed or renamed, a writeup, a problem, a
    template, the code, the Python), when something outside the run folders and the annotation files changed last
    too close to `previous` being taken for its record to vouch for it, or when either record cannot vouch for its
    entries at all. A run folder or annotation file not named is, entry for entry below it, the same in both records
    and changed last well before `previous` was taken (as `unchanged_names` has it). One pass over the records: at
    ten thousand runs this is most of what a rebuild after an edit spends before it reads a file."""
    if not (previous.certain and now.certain) or previous.context != now.context:
        return None
    roots = (runs_root, annotations_root)
    for top in previous.tops.keys() | now.tops.keys():
        before, here = previous.tops.get(top), now.tops.get(top)
        if top in roots:  # a file renamed into it moves its times; the folder itself must be the same one
            if before is None or here is None or before[:3] != here[:3] or here[0] & _S_IFMT != _S_IFDIR:
                return None
        elif before != here:
            return None
    limit = previous.taken_ns - RACY_MARGIN_NS
    changed: list[set[str]] = []
    for root in roots:
        listed, kept = now.folders.get(root), previous.folders.get(root)
        if listed is None or kept is None or listed[1] != kept[1]:
            return None
        old = named_entries(kept)
        changed.append({name for name, packed in named_entries(listed).items()
                        if packed != old[name] or _ctime(packed) >= limit})
    runs, annotations = changed
    below = (runs_root + "/", annotations_root + "/")
    for path, record in now.folders.items():
        if path in roots:
            continue
        if previous.folders.get(path) == record and record[0][_CTIME] < limit and record[3] < limit:
            continue
        if not path.startswith(below[0]):
            return None  # anything else, the folders below annotations/ (the writeups) included
        runs.add(path[len(below[0]):].split("/", 1)[0])
    for path in previous.folders.keys() - now.folders.keys():
        if not path.startswith(below[0]):
            return None
        runs.add(path[len(below[0]):].split("/", 1)[0])
    entries = named_entries(now.folders[annotations_root])
    if any(not _is_file(entries[name]) for name in annotations):
        return None  # a folder below annotations/ (the writeups) is not an annotation
    return runs, annotations


def build_context(config) -> tuple:
    """The folders a build is given and the Python it runs on: the same inputs under another of them is another
    site."""
    folders = (config.data_dir, config.resolved_problems_dir(), config.templates_dir, config.static_dir)
    return (SNAPSHOT_VERSION, sys.version, sys.executable, *(str(f) if f else None for f in folders))


def input_roots(config) -> tuple[list[Path], list[Path]]:
    """(data roots, code roots) of a build: every folder it reads a file from."""
    data = Path(config.data_dir)
    problems = config.resolved_problems_dir()
    data_roots = [data / "runs", data / "annotations", data / "problems"]
    if problems is not None and Path(problems) not in data_roots:
        data_roots.append(Path(problems))
    return data_roots, [Path(config.templates_dir), Path(config.static_dir), _PACKAGE]


# ------------------------------------------------------------------------------------------------ kept in the site


@dataclass
class Outcome:
    """What a build reported, kept with its record so that a build that stops early reports the same."""

    pages: int
    diagnostics: list[tuple]  # (path, message, line, hint, severity)
    files: list[str]  # the site's pages and assets: the site in place must still hold every one


def save(path: Path, snapshot: Snapshot, outcome: Outcome) -> None:
    """Write the record into the staging folder (swapped in whole with the site, so no atomic write is needed)."""
    blob = marshal.dumps({
        "version": SNAPSHOT_VERSION,
        "taken_ns": snapshot.taken_ns,
        "context": snapshot.context,
        "tops": snapshot.tops,
        "folders": snapshot.folders,
        "certain": snapshot.certain,
        "newest_ns": snapshot.newest_ns,
        "pages": outcome.pages,
        "diagnostics": outcome.diagnostics,
        "files": outcome.files,
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a hard link into the previous site: replace it, never write through it
    path.write_bytes(blob)


def load(path: Path) -> tuple[Snapshot, Outcome] | None:
    """The record kept in a site, or None when there is none or it cannot be read (then the build runs in full)."""
    try:
        saved = marshal.loads(path.read_bytes())  # the build's own output, never an input file
        if saved["version"] != SNAPSHOT_VERSION:
            return None
        snapshot = Snapshot(saved["taken_ns"], saved["context"], saved["tops"], saved["folders"], saved["certain"],
                            saved["newest_ns"])
        return snapshot, Outcome(saved["pages"], saved["diagnostics"], saved["files"])
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return None


def site_holds(now: Snapshot, site_dir: Path | str, files: list[str]) -> bool:
    """Whether every one of `files` is in `site_dir`: as `take` found them when it was asked about this very list
    in this folder, else looked for now."""
    asked = now.site_asked
    if asked is not None and now.site_complete is not None and asked[0] == str(site_dir) and asked[1] is files:
        return now.site_complete
    return _all_there(Path(site_dir), files)


def unchanged_outcome(site_dir: Path, kept: tuple[Snapshot, Outcome] | None, now: Snapshot) -> Outcome | None:
    """The previous build's outcome when the site in `site_dir` is what a build from the inputs `now` would write:
    the record kept in it (`load`) vouches for its inputs, `now` equals it, and every page and asset is still in
    place."""
    if kept is None or not now.certain:
        return None
    previous, outcome = kept
    if not previous.trusted() or not previous.same_inputs(now):
        return None
    if not site_holds(now, site_dir, outcome.files):
        return None
    return outcome
