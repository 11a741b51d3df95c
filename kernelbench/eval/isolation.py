"""The candidate's stages (check, bench) and the hardware-counter probe run in a bubblewrap sandbox, confined
(kernelbench.confinement: no privilege, a seccomp filter, bounded memory, processes and writes), so what a
solution can reach is what it was given, not what its user account can reach, even when the grader is root.

Without it, a candidate's process runs as the grader's own user beside the grader's processes: it can read the
judge's memory (`/proc/<pid>/mem`: the expected outputs), the grading process's environment (`/proc/<ppid>/environ`:
the secret seed), write anywhere the user may (another grading's folder, the repository, the grader's own code),
and leave a process behind that outlives the grading (`setsid`). Inside the sandbox:

- its own PID namespace: the grader's processes do not exist there, and when the stage ends every process started
  in it ends too, whatever session it moved to; its own IPC, UTS and network namespaces (no network);
- only what a stage needs, read-only: the system's toolchain folders, a few entries of /etc, /sys, the grader's
  Python (its prefix and import path) and the grader's own package, not its checkout (no runs, no other problems),
  no home folder, no /run (no host sockets to connect to);
- the grading's folder read-only, but for the stage's own out folder and the folders the candidate's stages share
  (`SHARED_WRITABLE`: /tmp, HOME, the build caches, /dev/shm), so the solution the lint read, the judge's and the
  fresh stage's folders and the other stage's outputs are out of its reach;
- a fresh /dev with only the GPU's device nodes added; a fresh /proc; the secret seed's file, where a bound folder
  holds it, covered;
- an environment from an allowlist (confinement.allowed_environment): no credential or grader secret, whatever
  the grader's own environment holds.

`KERNELBENCH_ISOLATION` chooses: `auto` (the default: the sandbox when bubblewrap and the confinement work here,
including the GPU inside it; otherwise none, and the report says why), `bwrap` (required: a grading fails if it
cannot be sandboxed) or `none`.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kernelbench import confinement
from kernelbench.errors import KernelBenchError

ISOLATION_ENV = "KERNELBENCH_ISOLATION"
GRADER_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the kernelbench package the stages import
MODES = ("auto", "bwrap", "none")
SECRET_FILE_ENV = "KERNELBENCH_SECRET_SEED_FILE"
# folders of the grading that the candidate's stages share and may write: /tmp (also /var/tmp), HOME, the build
# caches (GradingPlan.build_env) and /dev/shm; everything else in the grading folder is read-only to them
SHARED_WRITABLE = ("tmp", "home", "build", "shm")
# the grader's copy of the solution and what came with it: candidate stages may add files there (a build folder
# beside solution.py, as its authors' workspace allowed), never change what is there (addable_by_sandbox)
SOLUTION_FOLDER = "solution"
PROBE_TIMEOUT_S = 60
# the worker must import inside (the grader's packages reachable), and on a GPU the driver must initialise from a
# sandboxed process, as a candidate's would
WORKER_PROBE = "import sys, kernelbench.eval.worker"
CUDA_PROBE = WORKER_PROBE + "; import ctypes; r = ctypes.CDLL('libcuda.so.1').cuInit(0); r and sys.exit(r)"
# and the confinement holds: no capability left, the seccomp filter loaded, no_new_privs set, not root
# and the confinement holds: no capability left, the seccomp filter loaded, no_new_privs set, not root
CONFINED_PROBE = "; import kernelbench.confinement as c; sys.exit(c.privileges_held() or 0)"


@dataclass(frozen=True)
class Isolation:
    bwrap: str | None     # the bubblewrap binary when stages are sandboxed
    note: str             # "bwrap", or "none: <why>" (recorded in the report's environment)

    @property
    def sandboxed(self) -> bool:
        return self.bwrap is not None


def isolation_for(device: str) -> Isolation:
    mode = os.environ.get(ISOLATION_ENV, "auto").strip() or "auto"
    if mode not in MODES:
        raise KernelBenchError(f"{ISOLATION_ENV}={mode!r} is not a known isolation mode",
                               hint=f"use one of {', '.join(MODES)}")
    if mode == "none":
        return Isolation(None, f"none: {ISOLATION_ENV}=none")
    isolation = probe_sandbox(device)
    if mode == "bwrap" and not isolation.sandboxed:
        raise KernelBenchError(f"the candidate's stages cannot be sandboxed here ({isolation.note})",
                               hint="install bubblewrap and allow it to create namespaces, or set "
                                    f"{ISOLATION_ENV}=auto to grade unsandboxed (the report says so)")
    return isolation


@functools.lru_cache(maxsize=4)
def probe_sandbox(device: str) -> Isolation:
    """Once per process and device: does a sandboxed process start here, and reach the GPU?"""
    path = shutil.which("bwrap")
    if not path:
        return Isolation(None, "none: bubblewrap (bwrap) is not installed")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kb-isolation-probe-") as tmp:
        code = (CUDA_PROBE if device == "cuda" else WORKER_PROBE) + CONFINED_PROBE
        try:
            command = sandboxed([sys.executable, "-P", "-c", code], path, workdir=Path(tmp), device=device,
                                env=dict(os.environ))
        except confinement.ConfinementUnavailable as exc:
            return Isolation(None, f"none: {exc.diagnostic.message}")
        try:
            proc = subprocess.run(command.argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env=command.env, pass_fds=command.pass_fds, preexec_fn=confinement.apply_limits)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation(None, f"none: bubblewrap did not start a sandboxed process ({exc})")
        finally:
            command.close()
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit status {proc.returncode}"
        what = "import the worker and reach the GPU" if device == "cuda" else "import the worker"
        return Isolation(None, f"none: a sandboxed process could not {what} ({why[:300]})")
    return Isolation(path, "bwrap")


def sandboxed(argv: list[str], bwrap: str, *, workdir: Path, device: str, env: dict[str, str],
              writable: tuple[Path, ...] = (), cwd: Path | None = None,
              readable: tuple[Path, ...] = (), addable: tuple[Path, ...] = ()) -> SandboxedCommand:
    """The confined command that runs `argv` with the view described in the module docstring: `writable` (the
    stage's own out folder) beside SHARED_WRITABLE is all it may write; `readable` adds folders it may read (a
    tool the command starts that lies outside the system's folders: ncu installed elsewhere)."""
    workdir = Path(os.path.realpath(workdir))
    shared = [workdir / name for name in SHARED_WRITABLE]
    own = [Path(os.path.realpath(p)) for p in writable]
    for path in shared + own:
        path.mkdir(parents=True, exist_ok=True)
    confinement.hand_over(*shared, *own)
    workdir.chmod(workdir.stat().st_mode | 0o755)  # a mkdtemp folder is 0700: the sandbox uid walks through it
    fd = confinement.seccomp_fd()
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--unshare-cgroup-try", "--hostname", "kernelbench-grading", *confinement.bwrap_options(fd),
            "--dev", "/dev", "--proc", "/proc"]
    # the private folders first: the grader's Python or the grading folder may lie under one of them
    args += ["--perms", "0755", "--dir", "/var", "--bind", str(workdir / "tmp"), "/tmp", "--bind", str(workdir / "tmp"), "/var/tmp",
             "--bind", str(workdir / "shm"), "/dev/shm"]
    args += confinement.system_binds()
    shown = confinement.outermost(grader_paths(workdir) + [Path(os.path.realpath(p)) for p in readable])
    args += confinement.open_parents([str(p) for p in [*shown, workdir]])
    for path in shown:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", str(workdir), str(workdir)]
    for path in shared + own:
        args += ["--bind", str(path), str(path)]
    for path in addable:  # folders the command may add to, not change (confinement.addable_by_sandbox)
        if confinement.addable_by_sandbox(Path(os.path.realpath(path))):
            args += ["--bind", os.path.realpath(path), os.path.realpath(path)]
    if device == "cuda":
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    args += secret_cover()
    args += ["--chdir", os.path.realpath(cwd or workdir), "--"] + confinement.command_prefix() + list(argv)
    watch = confinement.DiskWatch(shared + own, confinement.disk_cap())
    return SandboxedCommand(args, sandbox_env(env, workdir), (fd,), watch)


@dataclass
class SandboxedCommand:
    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]          # the seccomp filter's descriptor, for bubblewrap
    watch: confinement.DiskWatch       # what the command writes, for its caller to bound

    def close(self) -> None:
        """Once the process has started (or failed to): the descriptors bubblewrap read are closed here."""
        confinement.close_fds(self.pass_fds)
        self.pass_fds = ()


def grader_paths(workdir: Path) -> list[Path]:
    """What the stages import, read-only: the interpreter's prefixes, its import path and PYTHONPATH (outermost
    only), and the grader's own package. A folder holding the grader's source checkout, or inside it, is left out
    (it holds runs/, problems/, solutions/), and so is one holding the grading folder, which is bound on its own."""
    checkout = GRADER_ROOT if (GRADER_ROOT / "pyproject.toml").is_file() else None
    entries = [*sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    found = [Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    for entry in entries:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = Path(os.path.realpath(entry))
        if checkout is not None and (real.is_relative_to(checkout) or checkout.is_relative_to(real)):
            continue
        if workdir.is_relative_to(real) or real in (Path("/"), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")):
            continue
        found.append(real)
    found.append(GRADER_ROOT / "kernelbench")
    return [p for p in confinement.outermost(found) if p.exists() and not workdir.is_relative_to(p)]


def secret_cover() -> list[str]:
    """The secret seed's file, covered wherever a bound folder would show it."""
    secret = os.environ.get(SECRET_FILE_ENV)
    if secret and Path(secret).is_file():
        return ["--ro-bind", "/dev/null", os.path.realpath(secret)]
    return []


def sandbox_env(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """The allowlisted environment, with HOME and the cache root inside the grading's folder."""
    home = str(Path(os.path.realpath(workdir)) / "home")
    return {**confinement.allowed_environment(env), "HOME": home, "XDG_CACHE_HOME": str(Path(home) / ".cache"),
            "TMPDIR": "/tmp"}
