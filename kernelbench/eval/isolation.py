"""The candidate's stages (check, bench) run in a bubblewrap sandbox, so what a solution can reach is what it was
given, not what its user account can reach.

Without it, a candidate's process runs as the grader's own user beside the grader's processes: it can read the
judge's memory (`/proc/<pid>/mem`: the expected outputs), the grading process's environment (`/proc/<ppid>/environ`:
the secret seed), write anywhere the user may (another grading's folder, the repository), and leave a process
behind that outlives the grading (`setsid`). Inside the sandbox:

- its own PID namespace: the grader's processes do not exist there, and when the stage ends every process started
  in it ends too, whatever session it moved to;
- its own IPC, UTS and network namespaces (no network);
- the filesystem read-only, except the grading's folder (inputs, outputs, build caches) and a private /tmp inside
  it that the grading's stages share; in that folder the grader's copy of the problem, which the trusted stages
  import, stays read-only; a fresh /dev with only the GPU's device nodes added (no host /dev/shm, where
  other gradings keep their folders); a fresh /proc; the secret seed's file, when there is one, covered;
- HOME inside the grading's folder, so compilers' caches land there;
- the grader's own Python (its prefix, every `sys.path` entry and the folder holding this package, which every
  stage is given first on its PYTHONPATH) visible read-only even where it lies under a folder the sandbox replaces
  (a package folder, a checkout or a virtual environment under /tmp): the worker must import the same grader there.

`KERNELBENCH_ISOLATION` chooses: `auto` (the default: the sandbox when bubblewrap works here, including the GPU
inside it; otherwise none, and the report says why), `bwrap` (required: a grading fails if it cannot be
sandboxed) or `none`.
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

from kernelbench.errors import KernelBenchError

ISOLATION_ENV = "KERNELBENCH_ISOLATION"
GRADER_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the kernelbench package the stages import
MODES = ("auto", "bwrap", "none")
SECRET_FILE_ENV = "KERNELBENCH_SECRET_SEED_FILE"
READ_ONLY_IN_WORKDIR = ("problem",)  # the grading's pristine problem copy (GradingPlan.pristine), which every stage imports
PROBE_TIMEOUT_S = 60
# the worker must import inside (the grader's packages reachable), and on a GPU the driver must initialise from a
# sandboxed process, as a candidate's would
WORKER_PROBE = "import kernelbench.eval.worker"
CUDA_PROBE = WORKER_PROBE + "; import ctypes, sys; sys.exit(ctypes.CDLL('libcuda.so.1').cuInit(0))"
PRIVATE_MOUNTS = ("/tmp", "/var/tmp")  # replaced inside the sandbox


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
    isolation = _probed(device)
    if mode == "bwrap" and not isolation.sandboxed:
        raise KernelBenchError(f"the candidate's stages cannot be sandboxed here ({isolation.note})",
                               hint="install bubblewrap and allow it to create namespaces, or set "
                                    f"{ISOLATION_ENV}=auto to grade unsandboxed (the report says so)")
    return isolation


@functools.lru_cache(maxsize=4)
def _probed(device: str) -> Isolation:
    """Once per process and device: does a sandboxed process start here, and reach the GPU?"""
    path = shutil.which("bwrap")
    if not path:
        return Isolation(None, "none: bubblewrap (bwrap) is not installed")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kb-isolation-probe-") as tmp:
        code = CUDA_PROBE if device == "cuda" else WORKER_PROBE
        argv = sandboxed([sys.executable, "-P", "-c", code], path, workdir=Path(tmp), device=device)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env=sandbox_env(dict(os.environ), Path(tmp)))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation(None, f"none: bubblewrap did not start a sandboxed process ({exc})")
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit status {proc.returncode}"
        what = "import the worker and reach the GPU" if device == "cuda" else "import the worker"
        return Isolation(None, f"none: a sandboxed process could not {what} ({why[:300]})")
    return Isolation(path, "bwrap")


def sandboxed(argv: list[str], bwrap: str, *, workdir: Path, device: str, cwd: Path | None = None) -> list[str]:
    """The bwrap command line that runs `argv` with the view described in the module docstring."""
    workdir = Path(os.path.realpath(workdir))
    private_tmp = workdir / "tmp"
    private_tmp.mkdir(exist_ok=True)
    (workdir / "home").mkdir(exist_ok=True)
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--unshare-cgroup-try", "--hostname", "kernelbench-grading",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", str(private_tmp), "/tmp", "--tmpfs", "/var/tmp"]
    for path in grader_paths_under_private_mounts(workdir):
        args += ["--ro-bind", path, path]
    args += ["--bind", str(workdir), str(workdir)]
    for name in READ_ONLY_IN_WORKDIR:
        if (workdir / name).is_dir():
            args += ["--ro-bind", str(workdir / name), str(workdir / name)]
    if device == "cuda":
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    secret = os.environ.get(SECRET_FILE_ENV)
    if secret and Path(secret).is_file():
        args += ["--ro-bind", "/dev/null", os.path.realpath(secret)]
    return args + ["--chdir", os.path.realpath(cwd or workdir), "--"] + list(argv)


def grader_paths_under_private_mounts(workdir: Path) -> list[str]:
    """The grader's interpreter prefix and import path entries that lie under /tmp or /var/tmp (which the sandbox
    replaces), outermost only; none that contains the grading folder, which is bound writable on its own."""
    found: list[str] = []
    for entry in sorted({os.path.realpath(p) for p in (*sys.path, sys.prefix, sys.exec_prefix, GRADER_ROOT) if p}):
        under = any(entry == m or entry.startswith(m + os.sep) for m in PRIVATE_MOUNTS)
        if not under or entry in PRIVATE_MOUNTS or not os.path.isdir(entry):
            continue
        if str(workdir).startswith(entry + os.sep) or any(entry.startswith(f + os.sep) for f in found):
            continue
        found.append(entry)
    return found


def sandbox_env(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """HOME and the cache root inside the grading's folder: the real home is read-only in the sandbox."""
    home = str(Path(os.path.realpath(workdir)) / "home")
    return {**env, "HOME": home, "XDG_CACHE_HOME": str(Path(home) / ".cache"), "TMPDIR": "/tmp"}
