"""The candidate's sandbox (kernelbench/eval/isolation.py), run for real with bubblewrap: what a sandboxed
process can see and touch, and that nothing it starts outlives its stage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernelbench import confinement
from kernelbench.eval.isolation import isolation_for, sandboxed

ISOLATION = isolation_for("cpu")
pytestmark = pytest.mark.skipif(not ISOLATION.sandboxed, reason=f"no sandbox here: {ISOLATION.note}")
REPO = Path(__file__).resolve().parents[2]


def start_inside(workdir: Path, code: str, env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    command = sandboxed([sys.executable, "-c", textwrap.dedent(code)], ISOLATION.bwrap, workdir=workdir, device="cpu",
                        env={**os.environ, **(env or {})}, writable=(workdir / "out",))
    try:
        return subprocess.Popen(command.argv, cwd=workdir, env=command.env, pass_fds=command.pass_fds,
                                preexec_fn=confinement.apply_limits, **popen)
    finally:
        command.close()


def run_inside(workdir: Path, code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = start_inside(workdir, code, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_the_grader_s_processes_and_environment_are_out_of_sight(tmp_path, monkeypatch):
    secret = tmp_path / "secret_seed"
    secret.write_text("123456789")
    monkeypatch.setenv("KERNELBENCH_SECRET_SEED_FILE", str(secret))
    proc = run_inside(tmp_path, f"""
        import os
        pids = [p for p in os.listdir('/proc') if p.isdigit()]
        print('pids', len(pids), os.getppid())
        print('parent visible', os.path.exists('/proc/{os.getpid()}/environ'))
        try:
            print('secret', repr(open({str(secret)!r}).read()))
        except OSError as exc:
            print('secret refused', exc.errno)
        """)
    assert proc.returncode == 0, proc.stderr
    assert "parent visible False" in proc.stdout
    assert "secret ''" in proc.stdout or "secret refused" in proc.stdout  # the secret's file is covered
    assert int(proc.stdout.split()[1]) <= 3  # bwrap's init, the process itself


def test_code_that_asks_whom_it_runs_as_gets_an_answer(tmp_path):
    """torch.compile names its cache folder after getpass.getuser(): a sandbox uid without a passwd entry made every
    honest compiled solution fail its checks (`getpwuid(): uid not found`)."""
    (tmp_path / "out").mkdir()
    proc = run_inside(tmp_path, """
        import getpass, grp, os, pwd
        print(getpass.getuser(), pwd.getpwuid(os.getuid()).pw_uid == os.getuid(), grp.getgrgid(os.getgid()).gr_gid)
        """)
    assert proc.returncode == 0, proc.stderr
    user, found, _ = proc.stdout.split()
    assert found == "True" and (user == confinement.SANDBOX_USER or os.geteuid() != 0)


def test_only_the_stage_s_own_and_shared_folders_are_writable(tmp_path):
    outside = REPO / "tests" / f"kb-isolation-{os.getpid()}.txt"
    (tmp_path / "judge").mkdir()
    proc = run_inside(tmp_path, f"""
        import os
        open('out/inside.txt', 'w').write('ok')
        open('/tmp/scratch.txt', 'w').write('ok')
        for path in ({str(outside)!r}, 'judge/worker_result.json', 'squat', os.path.expanduser('~/../x')):
            try:
                open(path, 'w').write('x')
                print('wrote', path)
            except OSError as exc:
                print('refused', path, exc.errno)
        print('shm', sorted(os.listdir('/dev/shm')) if os.path.isdir('/dev/shm') else None)
        """)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "inside.txt").read_text() == "ok"
    assert (tmp_path / "tmp" / "scratch.txt").read_text() == "ok"  # /tmp is the grading's own
    assert not outside.exists() and f"refused {outside}" in proc.stdout
    assert "refused judge/worker_result.json" in proc.stdout and "refused squat" in proc.stdout
    assert "shm []" in proc.stdout or "shm None" in proc.stdout  # no other grading's folder


def test_a_detached_process_ends_with_its_stage(tmp_path):
    """A double fork into a new session escapes a process-group kill; the PID namespace does not let it live."""
    beat = tmp_path / "out" / "beat"
    code = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    open({str(beat)!r}, 'a').write('.')
                    time.sleep(0.05)
            os._exit(0)
        time.sleep(30)
        """)
    proc = start_inside(tmp_path, code, start_new_session=True)
    deadline = time.monotonic() + 20
    while not (beat.exists() and beat.stat().st_size > 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert beat.exists(), "the detached process never ran"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(0.5)
    size = beat.stat().st_size
    time.sleep(0.5)
    assert beat.stat().st_size == size, "the detached process outlived its stage"


def test_the_grader_s_packages_under_tmp_are_importable_and_read_only_inside(tmp_path, monkeypatch):
    """A grader whose packages live under /tmp (a --target install, a virtual environment there): the sandbox's
    private /tmp would hide them, and every stage would die importing the worker."""
    site = Path("/tmp") / f"kb-isolation-site-{os.getpid()}"
    (site / "kb_probe_pkg").mkdir(parents=True, exist_ok=True)
    (site / "kb_probe_pkg" / "__init__.py").write_text("VALUE = 'seen'\n")
    workdir = tmp_path / "grading"
    workdir.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    try:
        proc = run_inside(workdir, f"""
            import kb_probe_pkg
            print('import', kb_probe_pkg.VALUE)
            try:
                open({str(site / 'kb_probe_pkg' / '__init__.py')!r}, 'a').write('x')
                print('wrote into the grader package')
            except OSError as exc:
                print('refused', exc.errno)
            """, env={"PYTHONPATH": str(site)})
    finally:
        (site / "kb_probe_pkg" / "__init__.py").unlink()
        (site / "kb_probe_pkg").rmdir()
        site.rmdir()
    assert proc.returncode == 0, proc.stderr
    assert "import seen" in proc.stdout and "refused" in proc.stdout


def test_the_grader_s_own_folder_under_tmp_is_bound_even_off_sys_path(monkeypatch):
    """A grader run as `python -c` from a checkout under /tmp has no sys.path entry for its folder (the script's
    is ''): its package is bound anyway, or a sandboxed stage would import another installed kernelbench."""
    from kernelbench.eval import isolation

    root = Path("/tmp") / f"kb-grader-root-{os.getpid()}"
    (root / "kernelbench").mkdir(parents=True, exist_ok=True)
    try:
        monkeypatch.setattr(isolation, "GRADER_ROOT", root)
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p])
        assert root / "kernelbench" in isolation.grader_paths(Path("/dev/shm/kb-grade-x"))
    finally:
        (root / "kernelbench").rmdir()
        root.rmdir()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root has privileges to keep")
def test_a_sandbox_that_keeps_root_s_privileges_is_refused(monkeypatch):
    """The probe checks the confinement from inside: a sandboxed process still holding root's capabilities (here:
    nothing gives them up) means no sandbox, and the report says why."""
    from kernelbench.eval import isolation

    monkeypatch.setattr(confinement, "command_prefix", lambda: [])
    isolation.probe_sandbox.cache_clear()
    try:
        note = isolation.probe_sandbox("cpu").note
    finally:
        isolation.probe_sandbox.cache_clear()
    assert note.startswith("none:") and "kept a privilege" in note and "runs as root" in note, note
