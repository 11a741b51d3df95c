"""The output directory: build into a staging folder beside it, then swap it in whole.

Like MkDocs the build is a function from inputs to a directory, but unlike MkDocs the output is never cleaned
in place: a reader (or the dev server) sees either the previous site or the next one, never half of each, and
an interrupted build leaves the previous site untouched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

STAGING_PREFIX = ".building-"
RETIRED_PREFIX = ".retired-"
_RENAME_EXCHANGE = 2


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


def claim(staging: Path) -> None:
    (staging / ".owner-pid").write_text(str(os.getpid()))


class Seeding:
    """Hard-link the previous site into the staging folder so unchanged pages cost nothing.

    Safe because every write into the staging folder replaces a file (unlink, then write) instead of editing
    it, so the previous site's inodes are never modified. GNU `cp -al` does it in its own process, in parallel
    with the build reading its inputs; elsewhere a Python walk does the same when `wait` is called.
    """

    def __init__(self, out_dir: Path, staging: Path):
        self.out_dir, self.staging = Path(out_dir), Path(staging)
        self.process = None
        if self.out_dir.is_dir() and shutil.which("cp") and os.uname().sysname == "Linux":
            self.process = subprocess.Popen(
                ["cp", "-al", "--", f"{self.out_dir}/.", f"{self.staging}/"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )

    def wait(self) -> None:
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


def swap_in(staging: Path, out_dir: Path) -> None:
    """Make `staging` the site at `out_dir` in one step and delete the previous site."""
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
    discard(retired)


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
