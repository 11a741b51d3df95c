"""The bubblewrap sandbox an agent runs in, confined as every process that runs untrusted code
(kernelbench.confinement: no privilege even when the harness is root, a seccomp filter, bounded memory, processes
and file sizes).

Inside, the agent sees: its workspace (writable), its own home (a per-run folder holding copies of its CLI's
config, writable), a private /tmp, the toolchain read-only (system directories, the Python environment with
torch and triton, CUDA, compilers, the agent CLI's own install), the GPU device nodes — and nothing else. The
grader's package source, the hardware tables, the problems and runs folders and the real home directory are
either never mounted or covered with an empty file or folder where they sit inside something that is.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kernelbench import confinement
from kernelbench.confinement import SYSTEM_DIRS
from kernelbench.errors import KernelBenchError

BWRAP = "bwrap"
PRIVATE_DIRS = ("/tmp", "/run", "/var/tmp")   # empty and private inside
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), allow unprivileged user "
                "namespaces (sysctl -w kernel.unprivileged_userns_clone=1 or "
                "kernel.apparmor_restrict_unprivileged_userns=0), or pass --no-sandbox to run unsandboxed "
                "(recorded in result.json as session.sandboxed=false)")


@dataclass
class SandboxSpec:
    """What one sandboxed process may see."""

    workspace: Path
    home: Path
    network: bool = True
    gpu: bool = True
    extra_ro: list[Path] = field(default_factory=list)      # the agent CLI's install, its runtime (node, ...)
    hidden: list[Path] = field(default_factory=list)        # paths to cover if a mounted folder holds them
    cwd: Path | None = None     # where the command starts, inside `workspace` (None: `workspace` itself)


class SandboxUnavailable(KernelBenchError):
    pass


def bwrap_path() -> str:
    path = shutil.which(BWRAP)
    if not path:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed", hint=INSTALL_HINT)
    return path


@functools.lru_cache(maxsize=1)
def probe() -> str:
    """Check once that bwrap can create its namespaces here; returns the bwrap path."""
    path = bwrap_path()
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-ipc",
            "--die-with-parent", "true"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise SandboxUnavailable(f"bubblewrap cannot create namespaces on this machine: "
                                 f"{proc.stderr.strip() or f'exit code {proc.returncode}'}", hint=INSTALL_HINT)
    return path


@dataclass
class Wrapped:
    """A sandboxed command line and the descriptors it needs kept open (the seccomp filter bubblewrap reads)."""

    argv: list[str]
    pass_fds: tuple[int, ...]

    def close(self) -> None:
        confinement.close_fds(self.pass_fds)
        self.pass_fds = ()


def wrap(argv: list[str], spec: SandboxSpec, env: dict[str, str]) -> Wrapped:
    """The bwrap command line that runs `argv` inside the sandbox with exactly `env`, confined; start it with
    `pass_fds=wrapped.pass_fds` and `preexec_fn=confinement.apply_limits`, then close the wrapped command."""
    confinement.hand_over(_real(spec.workspace), _real(spec.home))
    fd = confinement.seccomp_fd()
    args = [probe(), "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "kernelbench", *confinement.bwrap_options(fd)]
    if not spec.network:
        args.append("--unshare-net")
    # the private folders first: the toolchain, the interpreter or the CLI may lie under one of them (a
    # virtualenv under /tmp), and a bind made before the tmpfs would be hidden by it
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "0755", "--dir", "/var"]
    args += [a for m in PRIVATE_DIRS for a in ("--perms", "1777", "--tmpfs", m)]
    mounted = confinement.outermost(_toolchain_paths() + [p for p in map(_real, spec.extra_ro) if p.exists()])
    args += confinement.open_parents([str(p) for p in mounted + [_real(spec.home), _real(spec.workspace)]])
    for path in mounted:
        args += ["--ro-bind", str(path), str(path)]
    args += _links_to(mounted, spec.extra_ro)
    args += confinement.system_binds()
    if spec.gpu:
        for node in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", node, node]
    args += _cover(mounted, hidden_paths() + [_real(p) for p in spec.hidden])
    for path in (spec.home, spec.workspace):
        args += ["--bind", str(_real(path)), str(_real(path))]
    # a /dev/shm of its own (torch's multiprocessing, NCCL), on disk in its home rather than in the host's memory
    shm = _real(spec.home) / ".dev-shm"
    shm.mkdir(exist_ok=True)
    confinement.hand_over(shm)
    args += ["--bind", str(shm), "/dev/shm"]
    args += ["--chdir", str(_real(spec.cwd or spec.workspace)), "--clearenv"]
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    return Wrapped(args + ["--"] + confinement.command_prefix() + list(argv), (fd,))


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _toolchain_paths() -> list[Path]:
    """System folders, the Python environment and CUDA, as real (symlink-free) paths, wherever they lie (/tmp,
    /var/tmp, a home directory, /opt, a conda prefix)."""
    paths = [Path(p) for p in SYSTEM_DIRS if Path(p).exists() and not Path(p).is_symlink()]
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        paths.append(_real(prefix))
    paths += _package_dirs()
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            paths.append(_real(os.environ[var]))
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):  # the driver's libraries, often
        if entry and Path(entry).is_absolute():
            paths.append(_real(entry))
    return [p for p in paths if p.exists()]


def _package_dirs() -> list[Path]:
    """The import path's folders outside the prefixes: the user site (torch installed with pip --user), folders
    that .pth files add (packages installed in development mode). The grader's own code stays out, and so do
    the current folder and any folder around the grader's code."""
    hidden = hidden_paths()
    found = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = _real(entry)
        # a folder that holds the grader's code, or sits inside it, would show it
        if real == Path(os.getcwd()) or any(real.is_relative_to(h) or h.is_relative_to(real) for h in hidden):
            continue
        found.append(real)
    return found


def _links_to(mounted: list[Path], paths: list[Path]) -> list[str]:
    """A path reached through a symlink (a CLI's folder in a node_modules that links elsewhere) is mounted at its
    real place; the path as the command line names it becomes a symlink there."""
    args = []
    for named in sorted({Path(os.path.abspath(path)) for path in paths}):
        if named == _real(named) or any(named.is_relative_to(m) for m in mounted):
            continue
        args += ["--symlink", str(_real(named)), str(named)]
    return args


def _cover(mounted: list[Path], hidden: list[Path]) -> list[str]:
    """Mount an empty folder (or /dev/null) over every hidden path that a mounted folder would show."""
    args: list[str] = []
    for path in sorted(set(hidden)):
        if not path.exists() or not any(path.is_relative_to(m) for m in mounted):
            continue
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def hidden_paths() -> list[Path]:
    """Where the grader's own code lives: the kernelbench package, its repository, its editable-install hooks."""
    paths = []
    spec = importlib.util.find_spec("kernelbench")
    for location in (spec.submodule_search_locations or []) if spec else []:
        package = _real(location)
        paths.append(package)
        if (package.parent / "pyproject.toml").exists():
            paths.append(package.parent)  # a source checkout: problems/, runs/, solutions/ sit beside it
    for site_dir in {_real(p) for p in sys.path if p and Path(p).is_dir()}:
        for pattern in ("__editable__*kernelbench*", "kernelbench-*.dist-info", "kernelbench.egg-link",
                        "kernelbench.pth", "kernelbench"):
            paths.extend(_real(p) for p in site_dir.glob(pattern))
    return paths
