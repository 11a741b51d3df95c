"""The sandbox, proved from inside: a small Python program tries to read what it must not see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernelbench
from kernelbench import confinement
from kernelbench.harness import sandbox

REPO = Path(__file__).resolve().parents[2]

PROBE = r'''
import json, os, sys
report = {}
for path in json.loads(sys.argv[1]):
    try:
        with open(path, "rb") as handle:
            report[path] = "read %d bytes" % len(handle.read())
    except OSError as exc:
        report[path] = "denied: " + type(exc).__name__
try:
    import kernelbench
    report["import kernelbench"] = "imported from %s" % kernelbench.__file__
except ImportError as exc:
    report["import kernelbench"] = "denied: " + type(exc).__name__
report["home listing"] = sorted(os.listdir(os.path.expanduser("~"))) if os.path.isdir(os.path.expanduser("~")) else []
report["env"] = sorted(os.environ)
print(json.dumps(report))
'''


def inside(tmp_path: Path, code: str, *args: str, network: bool = True) -> subprocess.CompletedProcess:
    workspace, home = tmp_path / "workspace", tmp_path / "agent-home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    spec = sandbox.SandboxSpec(workspace=workspace, home=home, network=network)
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    wrapped = sandbox.wrap([sys.executable, "-c", code, *args], spec, env)
    try:
        return subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ["PATH"]}, pass_fds=wrapped.pass_fds,
                              preexec_fn=confinement.apply_limits)
    finally:
        wrapped.close()


@pytest.fixture
def secret_in_real_home():
    path = Path.home() / f".kernelbench-sandbox-test-{os.getpid()}"
    path.write_text("credential")
    yield path
    path.unlink()


def test_forbidden_reads_fail_from_inside(sandbox_ok, tmp_path, secret_in_real_home, shared_fixtures):
    other_run = tmp_path / "runs" / "20260101_000000_claude_x_04_kahan_softmax_t1"
    other_run.mkdir(parents=True)
    (other_run / "result.json").write_text("{}")
    package = Path(kernelbench.__file__).resolve().parent
    forbidden = [package / "hardware.py", package / "eval" / "grade.py", REPO / "problems" / "04_kahan_softmax" /
                 "problem.yaml", REPO / "README.md", secret_in_real_home, other_run / "result.json",
                 shared_fixtures / "README.md", Path("/etc/shadow")]
    forbidden = [str(p) for p in forbidden if p.exists()]
    proc = inside(tmp_path, PROBE, json.dumps(forbidden))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for path in forbidden:
        assert report[path].startswith("denied"), f"{path} is readable inside the sandbox: {report[path]}"
    assert report["import kernelbench"].startswith("denied"), report["import kernelbench"]
    assert not any(name.startswith(".kernelbench-sandbox-test") for name in report["home listing"])
    # each editable-install hook of the package reads as empty, not as the finder that maps kernelbench
    assert "Error processing line" not in proc.stderr


def test_secrets_in_the_environment_do_not_leak(sandbox_ok, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-the-agent")
    proc = inside(tmp_path, PROBE, "[]")
    assert "ANTHROPIC_API_KEY" not in json.loads(proc.stdout)["env"]


@pytest.mark.slow
def test_workspace_and_home_are_writable_toolchain_is_not(sandbox_ok, tmp_path):
    code = r'''
import os, sys, torch
open("solution.py", "w").write("x = 1\n")
open(os.path.expanduser("~/note"), "w").write("ok")
for path in (sys.prefix + "/kb-write-test", "/usr/kb-write-test"):
    try:
        open(path, "w")
        print("WROTE", path)
    except OSError:
        pass
print("torch", torch.__version__)
'''
    proc = inside(tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    assert "WROTE" not in proc.stdout and "torch" in proc.stdout
    assert (tmp_path / "workspace" / "solution.py").read_text() == "x = 1\n"
    assert (tmp_path / "agent-home" / "note").read_text() == "ok"


def test_private_tmp_and_no_network_when_asked(sandbox_ok, tmp_path):
    (Path("/tmp") / f"kb-host-tmp-{os.getpid()}").write_text("host")
    try:
        code = f"import os; print(os.path.exists('/tmp/kb-host-tmp-{os.getpid()}')); print(open('/proc/net/dev').read())"
        proc = inside(tmp_path, code, network=False)
    finally:
        (Path("/tmp") / f"kb-host-tmp-{os.getpid()}").unlink()
    first, *net = proc.stdout.splitlines()
    assert first == "False"
    interfaces = {line.split(":")[0].strip() for line in net[2:] if ":" in line}
    assert interfaces == {"lo"}


def test_unavailable_bwrap_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    sandbox.probe.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxUnavailable) as info:
            sandbox.probe()
    finally:
        sandbox.probe.cache_clear()
    assert "apt-get install bubblewrap" in str(info.value) and "--no-sandbox" in str(info.value)


@pytest.mark.parametrize("private", ["/tmp", "/var/tmp"])
def test_an_interpreter_and_packages_under_a_private_folder_run_inside(sandbox_ok, tmp_path, monkeypatch, private):
    """A virtual environment under /tmp or /var/tmp (folders the sandbox replaces) stays visible, read-only."""
    import shutil
    import tempfile

    venv = Path(tempfile.mkdtemp(prefix="kb-venv-", dir=private))
    venv.chmod(0o755)  # as an installed environment is: mkdtemp's 0700 would shut out the sandbox's own uid
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site_dir = next(venv.glob("lib/python*/site-packages"))
        (site_dir / "kb_marker_pkg.py").write_text("WHERE = __file__\n")
        monkeypatch.setattr(sys, "prefix", str(venv))
        monkeypatch.setattr(sys, "exec_prefix", str(venv))
        workspace, home = tmp_path / "workspace", tmp_path / "agent-home"
        workspace.mkdir()
        home.mkdir()
        spec = sandbox.SandboxSpec(workspace=workspace, home=home)
        code = ("import kb_marker_pkg, sys\nprint(sys.prefix, kb_marker_pkg.WHERE)\n"
                "try:\n    open(sys.prefix + '/written', 'w')\n    print('WROTE')\nexcept OSError:\n    pass\n")
        wrapped = sandbox.wrap([str(venv / "bin" / "python"), "-c", code], spec, {"PATH": "/usr/bin:/bin"})
        proc = subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ["PATH"]}, pass_fds=wrapped.pass_fds)
        wrapped.close()
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split()[0] == str(venv) and "WROTE" not in proc.stdout
    finally:
        shutil.rmtree(venv, ignore_errors=True)
