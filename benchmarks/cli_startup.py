"""Start-up cost of the `kernelbench` command: what a command pays before it does its own work.

Prints, for each command, the median and the minimum wall time over repeated runs (after warm-up runs that fill
the bytecode cache), beside the interpreter's own start-up, and for `transcript show` the in-process parse of the
same file, so that the command's overhead beyond its parse is `show − parse`:

    python benchmarks/cli_startup.py                      # this tree
    python benchmarks/cli_startup.py --tree /tmp/kb-old   # another checkout (e.g. `git worktree add /tmp/kb-old
                                                          # <commit>`), to compare before and after
The bytecode cache is on (PYTHONDONTWRITEBYTECODE is removed from the commands' environment): with it off, every
run compiles every module it imports, which is not what an installed command does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILE = REPO.parent / "shared/fixtures/transcripts/opencode-export" / \
    "session__curious-harbor__ses_39b4b4b3bffeXCkbhNdUgsq5wv.json"
# runs kernelbench's own entry point from the given tree, whatever is installed
ENTRY = "import sys; sys.path.insert(0, sys.argv.pop(1)); from kernelbench.cli import main; sys.exit(main())"
# the parse as the command does it: the loader imported, then the file's first load (its format's parser loads then)
PARSE = ("import sys, time; sys.path.insert(0, sys.argv[1]); from kernelbench.transcripts.loader import load; "
         "t = time.perf_counter(); load(sys.argv[2]); print(time.perf_counter() - t)")


def timed(argv: list[str], env: dict[str, str], runs: int, warmup: int) -> list[float]:
    times = []
    for index in range(warmup + runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if index >= warmup:
            times.append(time.perf_counter() - start)
    return times


def parse_seconds(tree: Path, file: Path, env: dict[str, str], runs: int) -> list[float]:
    return [float(subprocess.run([sys.executable, "-c", PARSE, str(tree), str(file)], env=env, check=True,
                                 capture_output=True, text=True).stdout) for _ in range(runs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose kernelbench is timed")
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a transcript of about 0.5 MB")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    if not args.file.is_file():
        parser.error(f"no transcript at {args.file} (give --file)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    entry = [sys.executable, "-c", ENTRY, str(args.tree.resolve())]
    rows = [("python -c pass", [sys.executable, "-c", "pass"]),
            ("kernelbench --help", entry + ["--help"]),
            ("kernelbench run --help", entry + ["run", "--help"]),
            (f"kernelbench transcript show FILE --json ({args.file.stat().st_size / 1e6:.2f} MB)",
             entry + ["transcript", "show", str(args.file), "--json"])]
    print(f"tree {args.tree}; median and minimum of {args.runs} runs after {args.warmup} warm-up runs")
    results = {}
    for label, argv in rows:
        times = timed(argv, env, args.runs, args.warmup)
        results[label] = statistics.median(times)
        print(f"  {label:<62} median {statistics.median(times) * 1e3:7.1f} ms   min {min(times) * 1e3:7.1f} ms")
    parse = parse_seconds(args.tree.resolve(), args.file, env, max(3, args.runs // 3))
    show = results[rows[-1][0]]
    print(f"  {'parse of FILE in process (load)':<62} median {statistics.median(parse) * 1e3:7.1f} ms")
    print(f"  transcript show overhead beyond its parse: {(show - statistics.median(parse)) * 1e3:.1f} ms; "
          f"beyond the bare interpreter's start-up too: "
          f"{(show - statistics.median(parse) - results[rows[0][0]]) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
