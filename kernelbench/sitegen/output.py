"""The output directory: build into a staging folder beside it, then swap it in whole.

Like MkDocs the build is a function from inputs to a directory, but unlike MkDocs the output is never cleaned
in place: a reader (or the dev server) sees either the previous site or the next one, never half of each, and
an interrupted build leaves the previous site untouched.

The staging folder starts as a copy of the site in place made of hard links (every write into it replaces a file,
never writes through one, so the site in place is never changed). At ten thousand runs that copy is 40,000 links
and 10,000 folders: seconds, for a rebuild that changes one page. So the site a swap retires is not deleted but
kept beside the output as the spare (`.spare-<name>`), and the next build takes it as its staging folder and brings
it up to date with the site in place: the spare is the site the one in place was seeded from (each site's record,
`SiteRecord`, says which), so the two differ only outside `runs/` (walked whole: a few folders) and in the run
folders that build wrote (named in the record). Anything the records cannot vouch for, and the first rebuilds,
seed by the full copy instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kernelbench.sitegen.buildcache import VIEWER_CACHE

STAGING_PREFIX = ".building-"
RETIRED_PREFIX = ".retired-"
SPARE_PREFIX = ".spare-"
SITE_RECORD = ".kernelbench-cache/site.json"  # inside each site: its SiteRecord
RUNS = "runs"
_RENAME_EXCHANGE = 2


class SiteRecord(BaseModel):
    """What a site says of itself, for the build that takes the site it retires as a spare (see the module's
    docstring): its own id, the id of the site it was seeded from (None: none), and the run folders it wrote
    (under runs/) after seeding. Every other file under runs/ is the seed's own, hard-linked. `root` is the
    device and inode of the site's own folder: a record copied into another tree (by a build of older code, which
    seeds the whole previous site, record included) does not describe that tree and is not believed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    seeded_from: str | None
    written_runs: list[str]
    root: tuple[int, int]

    @classmethod
    def load(cls, site: Path) -> SiteRecord | None:
        """The record of the site at `site` (the build's own output, never an input); None when there is none, it
        cannot be read, or it is not this folder's own."""
        try:
            record = cls.model_validate_json((Path(site) / SITE_RECORD).read_bytes())
            return record if record.root == _folder_id(site) else None
        except (OSError, ValueError):
            return None

    @classmethod
    def of_staging(cls, staging: Path, seeded_from: SiteRecord | None, written_runs: list[str]) -> SiteRecord:
        """The record of a site being built in `staging` (the folder becomes the site's own, inode and all)."""
        return cls(id=secrets.token_hex(16), seeded_from=seeded_from.id if seeded_from else None,
                   written_runs=written_runs, root=_folder_id(staging))

    def save(self, site: Path) -> None:
        target = Path(site) / SITE_RECORD
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a hard link into the previous site: replace it, never write through it
        target.write_bytes(self.model_dump_json().encode())


def _folder_id(folder: Path) -> tuple[int, int]:
    info = os.stat(folder)
    return info.st_dev, info.st_ino


def new_staging_dir(out_dir: Path) -> Path:
    """A fresh, empty folder next to `out_dir` (same file system, so the final rename is atomic)."""
    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{out_dir.name}-", dir=out_dir.parent))
    os.chmod(staging, 0o755)  # mkdtemp makes it 0700; it becomes the site's root, which a web server must read
    return staging


def remove_leftovers(out_dir: Path) -> None:
    """Delete staging and retired folders left by interrupted builds of this output (not running ones)."""
    for prefix in (STAGING_PREFIX, RETIRED_PREFIX):
        for stale in out_dir.parent.glob(f"{prefix}{out_dir.name}-*"):
            if stale.is_dir() and not _is_running_build(stale):
                discard(stale)


def discard(path: Path) -> None:
    """Delete a folder in a detached process: a site of thousands of folders takes seconds to delete on a
    busy disk, and nobody needs to wait for it. The folder is renamed first, so it is gone from view at once."""
    path = Path(path)
    if not path.name.startswith(RETIRED_PREFIX):
        name = path.name.removeprefix(STAGING_PREFIX)
        hidden = Path(tempfile.mkdtemp(prefix=f"{RETIRED_PREFIX}{name}-", dir=path.parent))
        os.replace(path, hidden / "site")
        path = hidden
    if not hasattr(os, "fork"):
        shutil.rmtree(path, ignore_errors=True)
        return
    if _spawn_deleter(path):
        return
    pid = os.fork()
    if pid == 0:  # child: detach, delete, and leave without running the parent's cleanup handlers
        try:
            if os.fork() == 0:
                os.setsid()
                os.nice(19)  # deleting the old site must not slow the next rebuild down
                shutil.rmtree(path, ignore_errors=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)  # the intermediate child exits at once; the grandchild is adopted by init


def _spawn_deleter(path: Path) -> bool:
    """Delete `path` with `rm` in a new session at the lowest priority, started by a shell that puts it in the
    background and exits at once (reaped here: no process is left behind to reap later). Spawned, not forked: a
    forked child's resident set is the build's own (hundreds of MiB at ten thousand runs), counted again by
    whoever sums the build's processes, while a spawned one starts small. False where the tools are missing."""
    shell, nice, rm = "/bin/sh", shutil.which("nice"), shutil.which("rm")
    if not hasattr(os, "posix_spawn") or not os.path.exists(shell) or nice is None or rm is None:
        return False
    script = '"$1" -n 19 "$2" -rf -- "$3" </dev/null >/dev/null 2>&1 &'
    try:
        pid = os.posix_spawn(shell, ["sh", "-c", script, "sh", nice, rm, str(path)], os.environ, setsid=True)
        os.waitpid(pid, 0)
    except OSError:
        return False
    return True


def _is_running_build(staging: Path) -> bool:
    owner = staging / ".owner-pid"
    try:
        pid = int(owner.read_text())
    except (OSError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def spare_dir(out_dir: Path) -> Path:
    """Where the site retired by the latest swap is kept for the next build (see the module's docstring)."""
    out_dir = Path(out_dir)
    return out_dir.parent / f"{SPARE_PREFIX}{out_dir.name}"


def take_spare(out_dir: Path, staging: Path) -> list[str] | None:
    """Move the spare into the (empty) staging folder when it is the site the one in place was seeded from; the run
    folders to bring up to date then (those the site in place wrote), or None: the staging folder is left empty
    and the spare, if any, is deleted."""
    spare = spare_dir(out_dir)
    if not spare.is_dir():
        return None
    live = SiteRecord.load(out_dir)
    kept = SiteRecord.load(spare)
    if live is None or kept is None or live.seeded_from != kept.id:
        discard_quietly(spare)
        return None
    try:
        os.rename(spare, staging)  # replaces the empty staging folder; another build may have taken it first
    except OSError:
        return None
    return live.written_runs


def discard_quietly(path: Path) -> None:
    try:
        discard(path)
    except OSError:  # taken or removed by another build meanwhile
        pass


def claim(staging: Path) -> None:
    (staging / ".owner-pid").write_text(str(os.getpid()))


class Seeding:
    """Hard-link the previous site into the staging folder so unchanged pages cost nothing.

    Safe because every write into the staging folder replaces a file (unlink, then write) instead of editing
    it, so the previous site's inodes are never modified. GNU `cp -al` does it in its own process, in parallel
    with the build reading its inputs; elsewhere a Python walk does the same when `wait` is called.
    """

    def __init__(self, out_dir: Path, staging: Path, spare_runs: list[str] | None = None):
        """`spare_runs`: the staging folder holds the spare (`take_spare`); only those run folders and what lies
        outside runs/ are brought up to date."""
        self.out_dir, self.staging = Path(out_dir), Path(staging)
        self.process = None
        self.spare_runs = spare_runs
        if spare_runs is not None:
            return
        if self.out_dir.is_dir() and shutil.which("cp") and os.uname().sysname == "Linux":
            self.process = subprocess.Popen(
                ["cp", "-al", "--", f"{self.out_dir}/.", f"{self.staging}/"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )

    def wait(self) -> None:
        if self.spare_runs is not None:
            mirror_changes(self.out_dir, self.staging, self.spare_runs)
            return
        if self.process is not None:
            _, err = self.process.communicate()
            if self.process.returncode == 0:
                return
            # a file system without hard links, or a non-GNU cp: start over with the portable walk
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging.mkdir()
        seed_from_previous(self.out_dir, self.staging)

    def cancel(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def seed_from_previous(out_dir: Path, staging: Path) -> None:
    """The portable walk behind `Seeding` (hard links where possible, copies otherwise)."""
    if not Path(out_dir).is_dir():
        return
    for root, dirs, files in os.walk(out_dir):
        rel = Path(root).relative_to(out_dir)
        target = staging / rel
        target.mkdir(exist_ok=True)
        for name in files:
            if name == ".owner-pid":
                continue
            try:
                os.link(Path(root) / name, target / name)
            except OSError:
                shutil.copy2(Path(root) / name, target / name)


def mirror_changes(live: Path, spare: Path, written_runs: list[str]) -> None:
    """Make the spare the same tree as the site in place, by hard links: everything outside runs/, the run folders
    the site in place wrote and the runs added or removed since; the other run folders are already the same. The
    viewer's cache of each run (a file per run: buildcache.viewer_cache_file) is written with its run's page, so it
    is brought up to date the same way."""
    live, spare = Path(live), Path(spare)
    _mirror_folder(live, spare, skip=frozenset({RUNS, VIEWER_CACHE}))
    _mirror_run_files(live / VIEWER_CACHE, spare / VIEWER_CACHE, {f"{name}.json" for name in written_runs})
    live_runs, spare_runs = live / RUNS, spare / RUNS
    if not live_runs.is_dir():
        shutil.rmtree(spare_runs, ignore_errors=True)
        return
    spare_runs.mkdir(exist_ok=True)
    wanted, present = _listing(live_runs), _listing(spare_runs)
    for name in present.keys() - wanted.keys():
        _remove(spare_runs / name, present.pop(name))
    written = set(written_runs)
    for name, entry in wanted.items():
        # a file (the runs index) costs nothing to compare: its inode came with the listing
        if name in written or name not in present or not entry.is_dir(follow_symlinks=False):
            _mirror_entry(live_runs / name, spare_runs / name, entry, present.get(name))


def _mirror_run_files(live: Path, spare: Path, written: set[str]) -> None:
    """A folder of one file per run mirrored: the files of the runs the site in place wrote linked again, those added
    linked, those removed deleted (names only: no status is taken of the others)."""
    if not live.is_dir():
        shutil.rmtree(spare, ignore_errors=True)
        return
    spare.mkdir(parents=True, exist_ok=True)
    wanted, present = set(os.listdir(live)), set(os.listdir(spare))
    for name in present - wanted:
        _remove_path(spare / name)
    for name in (wanted - present) | (written & wanted):
        _remove_path(spare / name)
        try:
            os.link(live / name, spare / name, follow_symlinks=False)
        except OSError:
            shutil.copy2(live / name, spare / name, follow_symlinks=False)


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _listing(folder: Path) -> dict[str, os.DirEntry]:
    with os.scandir(folder) as entries:
        return {entry.name: entry for entry in entries if entry.name != ".owner-pid"}


def _mirror_folder(live: Path, spare: Path, skip: frozenset[str] = frozenset()) -> None:
    """`spare` made the same as `live`: each file the same inode (a hard link), each folder mirrored in turn, but
    for the paths in `skip` (relative to `live`)."""
    wanted, present = _listing(live), _listing(spare)
    for name in present.keys() - wanted.keys() - skip:
        _remove(spare / name, present.pop(name))
    for name, entry in wanted.items():
        there = present.get(name)
        if name in skip or there is not None and _same_file(entry, there):
            continue  # the same file already (its inode came with the listing): no path built, nothing done
        below = frozenset(path.split("/", 1)[1] for path in skip if path.startswith(name + "/"))
        _mirror_entry(live / name, spare / name, entry, there, below)


def _same_file(wanted: os.DirEntry, present: os.DirEntry) -> bool:
    return (present.inode() == wanted.inode() and not wanted.is_dir(follow_symlinks=False)
            and not present.is_dir(follow_symlinks=False))


def _mirror_entry(live: Path, spare: Path, wanted: os.DirEntry, present: os.DirEntry | None,
                  skip: frozenset[str] = frozenset()) -> None:
    if wanted.is_dir(follow_symlinks=False):
        if present is not None and not present.is_dir(follow_symlinks=False):
            _remove(spare, present)
            present = None
        if present is None:
            spare.mkdir()
        _mirror_folder(live, spare, skip)
        return
    if present is not None and present.inode() == wanted.inode() and _kind(present) == _kind(wanted):
        return
    if present is not None:
        _remove(spare, present)
    try:
        os.link(live, spare, follow_symlinks=False)
    except OSError:
        shutil.copy2(live, spare, follow_symlinks=False)


def _kind(entry: os.DirEntry) -> str:
    return "folder" if entry.is_dir(follow_symlinks=False) else "file"


def _remove(path: Path, entry: os.DirEntry) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(path)
    else:
        path.unlink()


def swap_in(staging: Path, out_dir: Path, keep_spare: bool = False) -> None:
    """Make `staging` the site at `out_dir` in one step; the previous site is deleted, or kept as the spare
    (`keep_spare`) for the next build."""
    out_dir = Path(out_dir).resolve()
    (staging / ".owner-pid").unlink(missing_ok=True)
    if not out_dir.exists():
        os.replace(staging, out_dir)
        return
    if _exchange(staging, out_dir):
        retired = staging  # after the exchange the staging path holds the old site
    else:  # no renameat2 (non-Linux): two renames, a moment without a site
        retired = out_dir.parent / f"{RETIRED_PREFIX}{out_dir.name}-{os.getpid()}"
        os.replace(out_dir, retired)
        os.replace(staging, out_dir)
    if keep_spare and _keep_as_spare(retired, out_dir):
        return
    discard(retired)


def _keep_as_spare(retired: Path, out_dir: Path) -> bool:
    try:
        os.rename(retired, spare_dir(out_dir))  # fails when a spare is there (another build kept its own)
    except OSError:
        return False
    return True


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths with renameat2(RENAME_EXCHANGE) where the platform has it."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EPERM, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def abandon(staging: Path) -> None:
    discard(staging)
