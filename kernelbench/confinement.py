"""What confines every process that runs untrusted code, whichever sandbox starts it: the grader's candidate
stages (check, bench), the hardware-counter probe under ncu, and an agent's CLI.

bubblewrap gives each such process its own view of the filesystem and its own namespaces; this module takes away
what a process still holds inside that view, and bounds what it may use. CI and the GPU machines grade as root, so
everything here is meant to hold against root:

- **No privilege.** Started by root, the command runs under `setpriv` as an unprivileged uid of its own
  (`SANDBOX_UID`): no capability in any set, the bounding set empty, supplementary groups cleared. Not started by
  root, bubblewrap's user namespace runs it as the caller with every capability dropped. Either way
  `no_new_privs` is set, so nothing it executes gains privilege.
- **A seccomp filter** (libseccomp through pyseccomp, loaded by bubblewrap before the command starts) refuses, with
  EPERM, the system calls a kernel solution never needs and an escape always does: mounting, namespaces (unshare,
  setns, clone with a namespace flag; clone3 answers ENOSYS so the C library falls back to clone), tracing and
  other processes' memory (ptrace, process_vm_*, kcmp, pidfd_getfd), file handles (open_by_handle_at), kernel
  keys, BPF, perf events of other processes, kernel modules, reboot, kexec, swap, clocks, quotas, userfaultfd,
  port I/O, the kernel log, personality changes.
- **Bounds**: host memory (RLIMIT_DATA, which counts what a process maps writable, not the GPU's address-space
  reservations), processes (RLIMIT_NPROC, effective because the uid is no longer root's), one file's size
  (RLIMIT_FSIZE), no core dumps; what it writes in total is watched by its caller (`DiskWatch`).

What a CUDA, Triton, nvcc or ncu process needs was found by running them under this filter (the GPU validation
in `benchmarks/gpu_sandbox.py`); a filter, an uid switch or a bound that cannot be set up fails the grading or
the run with the reason, never runs it unconfined.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import resource
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernelbench.errors import KernelBenchError

# the uid and gid untrusted code runs as when root starts it: none of the system's accounts, so the process owns
# nothing outside the folders handed to it, and the process bound counts only sandboxed processes
SANDBOX_UID = SANDBOX_GID = 61000
SANDBOX_USER = "kernelbench"
# the bounds, each overridable by the grader's (trusted) environment, in GiB or a count
MEMORY_ENV, DISK_ENV = "KERNELBENCH_SANDBOX_MEMORY_GB", "KERNELBENCH_SANDBOX_DISK_GB"
FILE_ENV, PROCESSES_ENV = "KERNELBENCH_SANDBOX_FILE_GB", "KERNELBENCH_SANDBOX_PROCESSES"
DEFAULT_MEMORY_CAP = 64 << 30   # host memory per process (less on a machine with less: MemTotal * 3/4)
DEFAULT_DISK_CAP = 64 << 30     # bytes written under the writable folders of one sandboxed command
DEFAULT_FILE_CAP = 8 << 30      # one file's size
DEFAULT_PROCESS_CAP = 4096      # processes and threads of the sandbox uid together (torch starts one per core)

DENIED_SYSCALLS = (
    # the filesystem's shape and what lies under it
    "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "name_to_handle_at", "open_by_handle_at",
    # namespaces
    "unshare", "setns",
    # other processes: tracing, their memory, their descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    # the kernel itself
    "keyctl", "add_key", "request_key", "bpf", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "iopl",
    "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "userfaultfd", "personality", "lookup_dcookie", "nfsservctl", "vhangup", "uselib", "ustat", "sysfs",
    "_sysctl", "fanotify_init", "perf_event_open",
)
# clone with any of these flags makes a namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET,
# NEWTIME): refused, while threads and plain forks go through
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
EPERM, ENOSYS = 1, 38
INSTALL_HINT = ("install libseccomp (Debian: apt-get install libseccomp2) and util-linux's setpriv, or set "
                "KERNELBENCH_ISOLATION=none to grade unconfined (the report says so)")


# what a confined toolchain needs of the system: its folders, read-only, and a few entries of /etc (which also
# holds credentials and host configuration)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
ETC_ENTRIES = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "ssl", "ca-certificates",
               "ca-certificates.conf", "pki", "passwd", "group", "localtime", "ld.so.cache", "ld.so.conf",
               "ld.so.conf.d", "alternatives", "os-release", "gai.conf", "mime.types", "timezone", "nvidia",
               "OpenCL", "vulkan", "glvnd")
# the variables a confined process may inherit: how to reach the toolchain and the GPU, locale, compiler and
# thread settings; a name that looks like a credential never passes, whatever its prefix
ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONSAFEPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC",
    "CXX", "CUDACXX", "MAX_JOBS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TORCH_CUDA_ARCH_LIST", "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"})
ENV_PREFIXES = ("LC_", "TRITON_", "TORCHINDUCTOR_", "TORCH_EXTENSIONS_", "CUDA_CACHE_", "CUDA_MODULE_",
                "PYTORCH_CUDA_ALLOC", "NVCC_")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")


def allowed_environment(env: dict[str, str]) -> dict[str, str]:
    """The part of `env` a confined process may see (ENV_NAMES, ENV_PREFIXES), never a credential's name."""
    return {name: value for name, value in env.items()
            if (name in ENV_NAMES or name.startswith(ENV_PREFIXES))
            and not any(word in name.upper() for word in SECRET_WORDS)}


def system_binds() -> list[str]:
    """bubblewrap options that show the system's folders read-only (merged-/usr links kept as links), the
    entries of /etc a toolchain reads, and /sys (the CUDA driver reads the PCI topology there)."""
    # /etc itself is made by bubblewrap, as 0700 root's unless told: the sandbox uid could not reach the entries
    # (nor follow /usr/local/cuda -> /etc/alternatives/cuda, nor read the loader's cache)
    args: list[str] = ["--perms", "0755", "--dir", "/etc"]
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    identity = identity_files() if os.geteuid() == 0 else {}
    for name in ETC_ENTRIES:
        path = Path("/etc") / name
        if name in identity:
            args += ["--ro-bind", str(identity[name]), str(path)]
        elif path.exists():
            args += ["--ro-bind", str(path), str(path)]
    if Path("/sys").is_dir():
        args += ["--ro-bind", "/sys", "/sys"]
    return args


@functools.cache
def identity_files() -> dict[str, Path]:
    """/etc/passwd and /etc/group as the sandbox shows them when root starts it: the host's entries and one for
    SANDBOX_UID, so code that asks whom it runs as (getpass.getuser, torch.compile's cache folder) gets an answer
    instead of `getpwuid(): uid not found`. Written once per process, read-only, removed at its exit."""
    folder = Path(tempfile.mkdtemp(prefix="kernelbench-identity-"))
    os.chmod(folder, 0o755)
    atexit.register(shutil.rmtree, folder, True)
    entries = {"passwd": f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}:kernelbench sandbox:/nonexistent:"
                         "/usr/sbin/nologin\n",
               "group": f"{SANDBOX_USER}:x:{SANDBOX_GID}:\n"}
    files = {}
    for name, own in entries.items():
        host = Path("/etc") / name
        text = host.read_text() if host.is_file() else ""
        lines = [line for line in text.splitlines(keepends=True)
                 if line.split(":")[2:3] != [str(SANDBOX_UID)] and not line.startswith(f"{SANDBOX_USER}:")]
        body = "".join(lines)
        files[name] = folder / name
        files[name].write_text(body + ("" if not body or body.endswith("\n") else "\n") + own)
        os.chmod(files[name], 0o644)
    return files


def open_parents(destinations: list[str]) -> list[str]:
    """bubblewrap creates the folders above a mount point as 0700 root's, which the sandbox uid could not walk
    through (/root above a Python installed there): they are made 0755 first, outermost first."""
    made: set[str] = set()
    args: list[str] = []
    for dest in destinations:
        for parent in reversed(Path(dest).parents):
            name = str(parent)
            if name == "/" or name in made:
                continue
            made.add(name)
            args += ["--perms", "0755", "--dir", name]
    return args


def outermost(paths: list[Path]) -> list[Path]:
    """Drop paths that sit inside another one of the list (one mount covers them)."""
    result: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(kept) for kept in result):
            result.append(path)
    return result


class ConfinementUnavailable(KernelBenchError):
    pass


@functools.lru_cache(maxsize=1)
def seccomp_program() -> bytes:
    """The filter as a BPF program for bubblewrap's --seccomp (built once per process)."""
    try:
        import pyseccomp as seccomp
    except Exception as exc:
        raise ConfinementUnavailable(f"the seccomp filter cannot be built: {exc}", hint=INSTALL_HINT) from exc
    program = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            program.add_rule(seccomp.ERRNO(EPERM), name)
        except (RuntimeError, ValueError):  # a call this architecture does not have (iopl on arm64, ...)
            continue
    for flag in NAMESPACE_FLAGS:
        program.add_rule(seccomp.ERRNO(EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    program.add_rule(seccomp.ERRNO(ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        program.export_bpf(out)
        out.seek(0)
        return out.read()


def seccomp_fd() -> int:
    """A descriptor holding the filter, to pass to bubblewrap (`--seccomp FD`, and `pass_fds`); the caller closes
    it once the process has started."""
    fd = os.memfd_create("kernelbench-seccomp", 0)
    os.write(fd, seccomp_program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def close_fds(fds: tuple[int, ...]) -> None:
    """Close the descriptors a confined command was started with (bubblewrap has read them by then)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def running_as_root() -> bool:
    return os.geteuid() == 0


@functools.lru_cache(maxsize=1)
def setpriv_path() -> str:
    path = shutil.which("setpriv") or next((p for p in ("/usr/bin/setpriv", "/bin/setpriv") if os.access(p, os.X_OK)),
                                           None)
    if path is None:
        raise ConfinementUnavailable("setpriv (util-linux) is not installed: root cannot give up its privileges "
                                     "inside the sandbox", hint=INSTALL_HINT)
    return path


def bwrap_options(seccomp: int) -> list[str]:
    """bubblewrap's options for a confined command: the filter, a session of its own (no terminal to push
    input into), and, when not root, a user namespace with every capability dropped."""
    args = ["--seccomp", str(seccomp), "--new-session"]
    if not running_as_root():
        args += ["--unshare-user", "--cap-drop", "ALL"]
    return args


def command_prefix() -> list[str]:
    """What runs the command inside the sandbox: root's privileges given up first (setpriv), else nothing to
    give up (the user namespace has dropped every capability already)."""
    if not running_as_root():
        return []
    return [setpriv_path(), f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
            "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]


def hand_over(*paths: Path) -> None:
    """Make folders the confined command writes into its own (root hands them to SANDBOX_UID; a user's are
    already theirs), whatever they hold already."""
    if not running_as_root():
        return
    for top in paths:
        if not top.exists():
            continue
        for path in [top, *top.rglob("*")]:
            if not path.is_symlink():
                os.chown(path, SANDBOX_UID, SANDBOX_GID)


def addable_by_sandbox(folder: Path) -> bool:
    """Let the confined command add files to `folder` (a solution's build folder beside itself) while what root
    put there stays root's: the folder sticky and open to all, its files and subfolders left root's, so the
    sandbox uid may create but not rewrite, rename or delete them. Only where root grades (a user's sandbox runs
    as the user, who owns the files): False otherwise, and the folder stays read-only."""
    if not running_as_root() or not folder.is_dir():
        return False
    os.chmod(folder, 0o1777)
    return True


def readable_by_sandbox(*paths: Path) -> None:
    """Files root wrote for the confined command to read (a copied solution, the problem copy): readable by any
    uid, whatever umask or mode they were written with."""
    for top in paths:
        if not top.exists():
            continue
        for path in [top, *top.rglob("*")]:
            if path.is_symlink():
                continue
            mode = path.stat().st_mode & 0o7777
            os.chmod(path, mode | (0o555 if path.is_dir() else 0o444))


def memory_cap() -> int:
    if os.environ.get(MEMORY_ENV, "").strip():
        return _gib(MEMORY_ENV, DEFAULT_MEMORY_CAP)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return DEFAULT_MEMORY_CAP
    return min(DEFAULT_MEMORY_CAP, total * 3 // 4)


def disk_cap() -> int:
    return _gib(DISK_ENV, DEFAULT_DISK_CAP)


def file_cap() -> int:
    return _gib(FILE_ENV, DEFAULT_FILE_CAP)


def process_cap() -> int:
    configured = os.environ.get(PROCESSES_ENV, "").strip()
    return int(configured) if configured else DEFAULT_PROCESS_CAP


def _gib(name: str, default: int) -> int:
    configured = os.environ.get(name, "").strip()
    return int(float(configured) * (1 << 30)) if configured else default


def apply_limits() -> None:
    """In the child, before bubblewrap starts: inherited by everything the confined command starts."""
    apply_common_limits()
    memory = memory_cap()
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    memory = memory if hard == resource.RLIM_INFINITY else min(hard, memory)
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))


def apply_common_limits() -> None:
    """What every stage process gets, the trusted ones too (their memory is the problem's, not bounded here)."""
    die_with_parent()
    os.umask(0o022)  # what the stages write for each other stays readable by the sandbox uid
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_cap(), file_cap()))
    _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    cap = process_cap() if hard == resource.RLIM_INFINITY else min(hard, process_cap())
    resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))


@dataclass
class DiskWatch:
    """What a confined command has written under its writable folders, summed about four times a second by its
    caller: past `cap` bytes (or a million files) the caller stops it (so it is bounded by `cap` and what it can
    write in a quarter of a second)."""

    folders: list[Path]
    cap: int
    max_files: int = 1_000_000
    every_s: float = 0.25
    exceeded: str = ""
    _last: float = 0.0

    def check(self) -> bool:
        """True once the bound has been passed (then `exceeded` says by what)."""
        now = time.monotonic()
        if self.exceeded or now - self._last < self.every_s:
            return bool(self.exceeded)
        self._last = now
        total, files = 0, 0
        for folder in self.folders:
            for root, _dirs, names in os.walk(folder):
                files += len(names)
                for name in names:
                    try:
                        total += os.lstat(os.path.join(root, name)).st_blocks * 512
                    except OSError:
                        continue
        if total > self.cap:
            self.exceeded = f"wrote {total / (1 << 30):.1f} GiB, over the sandbox's bound of {self.cap / (1 << 30):g} GiB"
        elif files > self.max_files:
            self.exceeded = f"created {files} files, over the sandbox's bound of {self.max_files}"
        return bool(self.exceeded)


def privileges_held() -> str:
    """Inside a confined process: what it still holds that it should not (empty when confined as promised)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    held = [f"{key} {status.get(key, '?').strip()}" for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb")
            if status.get(key, "").strip().strip("0")]
    if status.get("Seccomp", "").strip() != "2":
        held.append("no seccomp filter")
    if status.get("NoNewPrivs", "").strip() != "1":
        held.append("no_new_privs unset")
    if os.geteuid() == 0:
        held.append("runs as root")
    return ("the sandboxed process kept a privilege: " + ", ".join(held)) if held else ""


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child before it runs its command: killed when the process that started it ends. A stage runs in a
    session of its own (so that its whole group can be killed), which a signal to the grader's group does not
    reach: a grader ended by `timeout`, a CI runner or a Ctrl-C elsewhere would otherwise leave its stages running,
    holding memory and a GPU, with nobody to read their replies. Linux only; elsewhere nothing is done."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)
