"""Every case of the hostile-input catalogue (tests/support/hostile.py), built for real.

An input case must build the rest of the site (every other run's page), name the bad file in the report with a
hint, fail --strict, leave the data folder exactly as it was and keep any secret from outside it off the site.
An --out case must be refused before anything is read or written. Cases that took gigabytes or hung before the
input policy existed run in a subprocess under a memory and time cap, so a regression fails instead of taking
the machine down.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.sitegen.main import config_from, parse_args
from kernelbench.sitegen.pipeline import REPO, build_site
from tests.support import hostile

INPUT_CASES = [c for c in hostile.CASES if not c.refused]
LIGHT = [c for c in INPUT_CASES if not c.heavy]
HEAVY = [c for c in INPUT_CASES if c.heavy]
REFUSED = [c for c in hostile.CASES if c.refused]
HEAVY_MEMORY_CAP = 2 << 30  # bytes of address space for a heavy case's build (before the policy: 10-24 GB)
HEAVY_TIME_CAP = 120  # seconds (before: hung forever, or 100 s and more)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return hostile.write_pristine(tmp_path_factory.mktemp("hostile") / "deck")


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root` by type and content, without following links or opening special files."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                found[str(path.relative_to(root))] = hashlib.blake2b(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(mode):
                found[str(path.relative_to(root))] = "link:" + os.readlink(path)
            else:
                found[str(path.relative_to(root))] = f"mode:{stat.S_IFMT(mode)}"
    return found


def strict_json(path: Path) -> object:
    def refuse(constant: str):
        raise ValueError(f"{path}: {constant} is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def other_runs(pristine: Path) -> list[str]:
    """The runs no case touches: their pages must be there whatever the case did."""
    return [p.name for p in hostile.runs_of(pristine)][1:]


def check_site(case: hostile.Case, applied: hostile.Applied, pristine: Path) -> None:
    out = applied.out
    assert (out / "index.html").is_file(), f"{case.name}: no leaderboard page"
    for run_id in other_runs(pristine):
        assert (out / "runs" / run_id / "index.html").is_file(), f"{case.name}: the page of {run_id} is missing"
    payload = strict_json(out / "data" / "leaderboard.json")
    assert payload["cells"], case.name
    if case.secret:
        for path in out.rglob("*"):
            if path.is_file():
                assert case.secret.encode() not in path.read_bytes(), f"{case.name}: the secret reached {path}"


@pytest.mark.parametrize("case", LIGHT, ids=lambda c: c.name)
def test_input_case_builds_the_rest_and_reports_the_file(case, pristine, tmp_path):
    applied = hostile.apply(case, pristine, tmp_path)
    before = snapshot(applied.data.parent / "data")
    config = config_from(parse_args(applied.build_args()))
    def as_attacked() -> None:  # the data as the attack left it is what the build must not change
        before.clear()
        before.update(snapshot(applied.data.parent / "data"))

    if case.during:
        with hostile.mid_build(applied, after=as_attacked):
            report = build_site(config)
    else:
        report = build_site(config)
    assert snapshot(applied.data.parent / "data") == before, f"{case.name}: the data folder changed"
    check_site(case, applied, pristine)
    if case.check:
        case.check(applied.out)
    shown = "\n".join(str(d) for d in report.diagnostics)
    assert not any(c in shown for c in "\x1b\x07\u200b\u202e"), f"{case.name}: a report acts on the terminal"
    if case.expect:
        named = [d for d in report.diagnostics if case.expect in str(d.path) and (d.line or not case.line)]
        assert named, f"{case.name}: nothing reported about {case.expect}: {[str(d) for d in report.diagnostics]}"
        assert all(d.hint for d in named), f"{case.name}: a report without a hint: {named}"
        assert report.failed_strict


@pytest.mark.slow
@pytest.mark.parametrize("case", HEAVY, ids=lambda c: c.name)
def test_heavy_input_case_builds_within_bounds(case, pristine, tmp_path):
    applied = hostile.apply(case, pristine, tmp_path)
    before = snapshot(applied.data)
    started = time.monotonic()
    build = subprocess.run(
        [sys.executable, str(REPO / "build.py"), "--quiet", "--jobs", "1", "--strict", *applied.build_args()],
        capture_output=True, text=True, timeout=HEAVY_TIME_CAP, cwd=REPO,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (HEAVY_MEMORY_CAP, HEAVY_MEMORY_CAP)),
    )
    seconds = time.monotonic() - started
    assert "Traceback" not in build.stderr, build.stderr[-2000:]
    assert snapshot(applied.data) == before
    check_site(case, applied, pristine)
    if case.expect:
        assert build.returncode == 1, f"{case.name}: --strict passed ({seconds:.1f} s)\n{build.stderr[-2000:]}"
        assert case.expect in build.stderr
    else:
        assert build.returncode in (0, 1), build.stderr[-2000:]


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.name)
def test_output_overlapping_the_data_is_refused_before_any_work(case, pristine, tmp_path):
    applied = hostile.apply(case, pristine, tmp_path)
    watched = applied.data.parent
    before = snapshot(watched)
    with pytest.raises(KernelBenchError) as caught:
        build_site(config_from(parse_args(applied.build_args())))
    assert "input folder" in str(caught.value) and caught.value.diagnostic.hint
    assert snapshot(watched) == before


def test_refusal_is_exit_code_2_with_a_message(pristine, tmp_path, capsys):
    from kernelbench.sitegen.main import main

    case = next(c for c in REFUSED if c.name == "out-is-data")
    applied = hostile.apply(case, pristine, tmp_path)
    assert main(applied.build_args()) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {applied.data}: this output folder (--out) contains the input folder")
    assert "Traceback" not in err


@pytest.mark.parametrize("out", ["site", "docs/site", "../elsewhere-site"])
def test_the_repository_may_hold_its_own_site(out, tmp_path):
    from kernelbench.sitegen.pipeline import BuildConfig, refuse_output_inside_inputs

    refuse_output_inside_inputs(BuildConfig(), (REPO / out).resolve())


@pytest.mark.parametrize("out", [".", "runs", "runs/x", "annotations", "problems/01_fp8_gemm", "templates",
                                 "static", "kernelbench", "kernelbench/sitegen", ".."])
def test_the_repository_inputs_and_code_are_guarded(out):
    from kernelbench.sitegen.pipeline import BuildConfig, refuse_output_inside_inputs

    with pytest.raises(KernelBenchError, match="input folder"):
        refuse_output_inside_inputs(BuildConfig(), (REPO / out).resolve())


def test_site_is_world_readable_whatever_the_umask(pristine, tmp_path, config_for):
    out = tmp_path / "site"
    previous = os.umask(0o077)
    try:
        build_site(config_for(pristine, out))
    finally:
        os.umask(previous)
    wrong = []
    for path in [out, *out.rglob("*")]:
        if ".kernelbench-cache" in path.parts:  # the build's own compiled templates: not part of the site
            continue
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        want = 0o755 if path.is_dir() else 0o644
        if mode != want:
            wrong.append(f"{path.relative_to(out)} {oct(mode)}")
    assert not wrong, wrong[:10]


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_render_workers_die_with_a_build_killed_by_sigkill(tmp_path):
    from tests.support.synthetic import write_deck

    write_deck(tmp_path / "data", n_runs=24, transcript_bytes=300_000)
    build = subprocess.Popen([sys.executable, str(REPO / "build.py"), "--quiet", "--jobs", "2", "--data",
                              str(tmp_path / "data"), "--out", str(tmp_path / "site")], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while not workers and build.poll() is None and time.monotonic() < deadline:
        workers = [pid for pid in _children(build.pid) if b"python" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        time.sleep(0.02)
    if not workers:
        build.kill()
        build.wait()
        pytest.skip("the build finished before its render workers were seen")
    build.send_signal(signal.SIGKILL)
    build.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [pid for pid in workers if _alive(pid)]
    for pid in alive:  # started by this test (through the build): end them by id
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"render workers {alive} outlived the build"
