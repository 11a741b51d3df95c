"""The red-team census: every attack of tests/redteam/catalogue.py run inside the candidate sandbox as it was
built before confinement (bubblewrap with `/` read-only and root's capabilities, as of commit 08289c2) and as it
is built now, and whether each got its effect. Prints a Markdown table and the counts (tried / caught).

    python benchmarks/redteam.py [--before REV] [--out FILE]

Run it as root: that is what CI and the GPU machines grade as, and what the confinement has to hold against."""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT_S = 30
HUNG = "<hung>"
sys.path.insert(0, str(REPO))

from kernelbench import confinement  # noqa: E402  (after the path)
from kernelbench.eval.isolation import isolation_for, sandboxed  # noqa: E402
from tests.redteam import conftest as redteam  # noqa: E402
from tests.redteam.catalogue import ATTACKS  # noqa: E402


def old_isolation(rev: str):
    """kernelbench/eval/isolation.py as it was at `rev`, loaded as its own module."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:kernelbench/eval/isolation.py"],
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="kb-redteam-old-")) / "old_isolation.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_isolation", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_isolation"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def run_before(old, bwrap: str, code: str, host: redteam.Host) -> str:
    argv = old.sandboxed([sys.executable, "-P", "-c", code], bwrap, workdir=host.workdir, device="cpu")
    env = old.sandbox_env({k: v for k, v in os.environ.items()
                           if k not in ("KERNELBENCH_SECRET_SEED", "KERNELBENCH_SECRET_SEED_FILE")}, host.workdir)
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=LIMIT_S, cwd=host.workdir)
    except subprocess.TimeoutExpired:
        return HUNG
    return proc.stdout + "\n" + proc.stderr


def run_now(bwrap: str, code: str, host: redteam.Host) -> str:
    command = sandboxed([sys.executable, "-P", "-c", code], bwrap, workdir=host.workdir, device="cpu",
                        env=dict(os.environ), writable=(host.workdir / "check",))
    try:
        proc = subprocess.run(command.argv, env=command.env, pass_fds=command.pass_fds, capture_output=True,
                              text=True, timeout=LIMIT_S, cwd=host.workdir, preexec_fn=confinement.apply_limits)
    except subprocess.TimeoutExpired:
        return HUNG
    finally:
        command.close()
    return proc.stdout + "\n" + proc.stderr


def effect(output: str, host: redteam.Host, reached_before: int) -> tuple[bool, str]:
    if output == HUNG:
        return True, f"the sandboxed process did not end within {LIMIT_S} s (its stage would hang to its limit)"
    try:
        seen = redteam.verdict(output)
    except AssertionError:
        return False, "no verdict printed: " + output.strip().splitlines()[-1][:120] if output.strip() else ""
    outside = host.grader_file.read_text() != "untouched\n" or host.reached() > reached_before
    return bool(seen["effect"]) or outside, seen["detail"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="08289c2", help="the commit whose sandbox is the 'before' column")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    bwrap = isolation_for("cpu").bwrap
    if bwrap is None:
        raise SystemExit(f"no sandbox here: {isolation_for('cpu').note}")
    old = old_isolation(args.before)
    rows, caught = [], {"before": 0, "now": 0}
    tried = 0
    for attack in ATTACKS:
        if attack.x86_64_only and platform.machine() != "x86_64":
            continue
        tried += 1
        cells = {}
        for column in ("before", "now"):
            with tempfile.TemporaryDirectory(prefix="kb-redteam-") as tmp, \
                    redteam.host_at(Path(tmp), os.environ.__setitem__) as host:
                code = redteam.program(attack, host)
                output = run_before(old, bwrap, code, host) if column == "before" else run_now(bwrap, code, host)
                got, detail = effect(output, host, 0)
            caught[column] += not got
            cells[column] = ("EFFECT" if got else "blocked", detail)
        rows.append((attack, cells))
    lines = [f"Red-team census, {time.strftime('%Y-%m-%d')}, uid {os.geteuid()}, {platform.machine()}, "
             f"kernel {platform.release()}; before = the sandbox of {args.before}, now = this checkout's.", "",
             "| attack | route | before | now | what the attack saw now |", "| --- | --- | --- | --- | --- |"]
    for attack, cells in rows:
        detail = cells["now"][1].replace("|", "/").replace("\n", " ")[:140]
        lines.append(f"| {attack.name} | {attack.route} | {cells['before'][0]} | {cells['now'][0]} | {detail} |")
    lines += ["", f"tried {tried}: caught before {caught['before']}, caught now {caught['now']}"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if caught["now"] == tried else 1


if __name__ == "__main__":
    raise SystemExit(main())
