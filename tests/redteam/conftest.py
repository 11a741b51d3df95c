"""The host an attack aims at: a grading folder laid out as the grader lays it, listeners that count who reached
them, a secret seed file, a sacrificial file inside the grader's package, and the bounds the attacks flood."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernelbench import confinement
from kernelbench.eval.isolation import GRADER_ROOT, isolation_for, sandboxed

from .catalogue import PRELUDE, Attack

REPO = Path(__file__).resolve().parents[2]
BOUNDS = {confinement.MEMORY_ENV: "1", confinement.PROCESSES_ENV: "64", confinement.FILE_ENV: "0.01"}
SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-redteam", "OPENAI_API_KEY": "sk-redteam", "GITHUB_TOKEN": "ghp_redteam",
           "AWS_SECRET_ACCESS_KEY": "redteam", "KERNELBENCH_SECRET_SEED": "424242"}


class Listener(threading.Thread):
    """Accepts connections and counts them (a host service the sandbox must not reach)."""

    def __init__(self, sock: socket.socket):
        super().__init__(daemon=True)
        self.sock, self.reached = sock, 0
        sock.listen(8)
        sock.settimeout(0.2)
        self.stopped = False

    def run(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.reached += 1
            conn.close()


@dataclass
class Host:
    workdir: Path
    grader_file: Path
    secret_file: Path
    tcp: Listener
    abstract: Listener
    abstract_name: str
    unix: list[Listener] = field(default_factory=list)
    unix_paths: list[str] = field(default_factory=list)

    def placeholders(self) -> dict[str, object]:
        return {"HOST_GRADER_FILE": str(self.grader_file), "HOST_SECRET_FILE": str(self.secret_file),
                "HOST_PID": os.getpid(), "HOST_PORT": self.tcp.sock.getsockname()[1],
                "HOST_ABSTRACT": self.abstract_name, "HOST_SOCKETS": self.unix_paths,
                "HOST_RUNS": str(REPO / "runs"), "HOST_PROBLEMS": str(REPO / "problems"),
                "HOST_WORKDIR": str(self.workdir), "HOST_MEMORY_GB": int(BOUNDS[confinement.MEMORY_ENV]),
                "HOST_PROCESSES": int(BOUNDS[confinement.PROCESSES_ENV]),
                "HOST_FILE_BYTES": int(float(BOUNDS[confinement.FILE_ENV]) * (1 << 30))}

    def reached(self) -> int:
        return self.tcp.reached + self.abstract.reached + sum(u.reached for u in self.unix)


def program(attack: Attack, host: Host) -> str:
    code = attack.code
    for name, value in host.placeholders().items():
        code = code.replace(name, repr(value))
    return PRELUDE + code


def verdict(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, f"the attack printed no verdict: {stdout[-2000:]}"
    return json.loads(lines[-1])


def skip_unless_applies(attack: Attack) -> None:
    if attack.x86_64_only and platform.machine() != "x86_64":
        pytest.skip(f"{attack.name} uses x86-64 system call numbers")


@pytest.fixture
def host(tmp_path, monkeypatch):
    with host_at(tmp_path, monkeypatch.setenv) as built:
        yield built


@contextlib.contextmanager
def host_at(tmp_path: Path, setenv) -> Iterator[Host]:
    """The host of one attack in `tmp_path`; `setenv(name, value)` sets the grader's environment for it."""
    workdir = tmp_path / "grading"
    for name in ("problem", "solution", "judge", "inputs", "check"):
        (workdir / name).mkdir(parents=True)
    (workdir / "solution" / "solution.py").write_text("# the linted solution\n")
    (workdir / "solution" / "kernels.cu").write_text("// a sidecar\n")
    confinement.readable_by_sandbox(workdir / "solution")
    secret = workdir / "secret_seed"
    secret.write_text("SEED 123456789")
    setenv("KERNELBENCH_SECRET_SEED_FILE", str(secret))
    for name, value in {**BOUNDS, **SECRETS}.items():
        setenv(name, value)
    grader_file = GRADER_ROOT / "kernelbench" / f".redteam-target-{os.getpid()}"
    grader_file.write_text("untouched\n")
    tcp = Listener(socket.create_server(("127.0.0.1", 0)))
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    abstract_name = f"kb-redteam-{tag}"
    abstract_sock = socket.socket(socket.AF_UNIX)
    abstract_sock.bind("\0" + abstract_name)
    host = Host(workdir, grader_file, secret, tcp, Listener(abstract_sock), abstract_name)
    for folder in ("/run", "/tmp", str(Path.home())):
        path = Path(folder) / f"kb-redteam-{tag}.sock"
        if not Path(folder).is_dir():
            continue
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        path.chmod(0o777)
        host.unix.append(Listener(sock))
        host.unix_paths.append(str(path))
    for listener in (host.tcp, host.abstract, *host.unix):
        listener.start()
    try:
        yield host
    finally:
        for listener in (host.tcp, host.abstract, *host.unix):
            listener.stopped = True
            listener.sock.close()
        for path in host.unix_paths:
            Path(path).unlink(missing_ok=True)
        grader_file.unlink(missing_ok=True)


def run_in_grading_sandbox(attack: Attack, host: Host) -> tuple[dict, subprocess.CompletedProcess]:
    isolation = isolation_for("cpu")
    if not isolation.sandboxed:
        pytest.skip(f"no sandbox here: {isolation.note}")
    command = sandboxed([sys.executable, "-P", "-c", program(attack, host)], isolation.bwrap,
                        workdir=host.workdir, device="cpu", env=dict(os.environ), writable=(host.workdir / "check",),
                        addable=(host.workdir / "solution",))
    try:
        proc = subprocess.run(command.argv, env=command.env, pass_fds=command.pass_fds, capture_output=True,
                              text=True, timeout=120, cwd=host.workdir, preexec_fn=confinement.apply_limits)
    finally:
        command.close()
    return verdict(proc.stdout + "\n" + proc.stderr), proc
