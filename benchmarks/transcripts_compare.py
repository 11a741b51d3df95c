"""Before/after: parse + render throughput of this tree against an earlier revision, measured alternately.

    python benchmarks/transcripts_compare.py --against 45d8e89 --rounds 5
    python benchmarks/transcripts_compare.py --against HEAD~3 --input /tmp/big.jsonl

On a shared machine the load changes from minute to minute, so two benchmark runs made minutes apart do not compare
well. Here the earlier revision's `kernelbench` package is exported (git archive) under /tmp and both versions parse
and render the same inputs in fresh processes, taking turns, round after round (which one goes first alternates
from round to round). Each figure is printed for the best round and the median one: on a machine shared with other
jobs the best of a few rounds can be one lucky run, the median moves less (each time is picked per column).
Figures are MB per second of process CPU time (and of wall time, for reference).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "transcripts"
JSONL_FOLDERS = ("claude-session", "claude-stream", "codex-rollout", "codex-exec", "kimi-wire")

CHILD = """
import sys, time
from pathlib import Path
from kernelbench.transcripts import load
from kernelbench.transcripts.viewer import write_viewer
files, out = [Path(p) for p in sys.argv[2:]], Path(sys.argv[1])
for path in files:                                    # warm-up: imports, lazily built validators
    write_viewer(load(path), out, asset_prefix="")
cp = cr = wp = wr = 0.0
for path in files:
    c0, w0 = time.process_time(), time.perf_counter()
    session = load(path)
    c1, w1 = time.process_time(), time.perf_counter()
    write_viewer(session, out, asset_prefix="")
    c2, w2 = time.process_time(), time.perf_counter()
    cp, cr, wp, wr = cp + c1 - c0, cr + c2 - c1, wp + w1 - w0, wr + w2 - w1
print(cp, cr, wp, wr)
"""


def export(revision: str) -> Path:
    """The revision's package (and static assets) in a folder of its own, importable with PYTHONPATH."""
    root = Path(tempfile.mkdtemp(prefix="kbt-compare-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "kernelbench", "static", "templates"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


def one_round(code: Path, files: list[Path], out: Path) -> list[float]:
    env = {"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(out), *map(str, files)], capture_output=True, text=True,
                          check=True, env=env, cwd=code)
    return [float(x) for x in done.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the earlier revision (a commit, tag or HEAD~N)")
    parser.add_argument("--rounds", type=int, default=5, help="turns each version takes (default 5)")
    parser.add_argument("--input", type=Path, action="append",
                        help="transcript(s) to use (default: every JSON Lines fixture)")
    args = parser.parse_args()
    files = args.input or [p for name in JSONL_FOLDERS for p in sorted((FIXTURES / name).glob("*.jsonl"))]
    mb = sum(p.stat().st_size for p in files) / 1e6
    before = export(args.against)
    versions = {f"{args.against} (before)": before, "this tree (after)": REPO}
    rounds: dict[str, list[list[float]]] = {name: [] for name in versions}
    out = Path(tempfile.mkdtemp(prefix="kbt-compare-out-"))
    try:
        for round_number in range(args.rounds):
            # the version that goes first alternates: with identical code, the second of two back-to-back runs
            # measured a few per cent slower (what the first left behind: written files, the page cache)
            turns = list(versions.items())
            for name, code in turns if round_number % 2 == 0 else reversed(turns):
                rounds[name].append(one_round(code, files, out / "transcript"))
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        shutil.rmtree(before, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    print(f"{len(files)} files, {mb:.2f} MB, {args.rounds} alternating rounds (MB/s)")
    print(f"{'version':36} {'CPU: parse':>10} {'render':>7} {'both':>7} | {'wall: parse':>11} {'render':>7} "
          f"{'both':>7}")
    for name, times in rounds.items():
        for label, pick in (("best", min), ("median", statistics.median)):
            cp, cr, wp, wr = (pick(column) for column in zip(*times))
            print(f"{name + ' ' + label:36} {mb / cp:10.1f} {mb / cr:7.1f} {mb / (cp + cr):7.1f} | "
                  f"{mb / wp:11.1f} {mb / wr:7.1f} {mb / (wp + wr):7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
