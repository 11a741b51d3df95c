"""Start-up cost of the `kernelbench` command: what a command pays before it does its own work.

Prints, for each command, the median and the minimum wall time over repeated runs (after warm-up runs that fill
the bytecode cache), beside the interpreter's own start-up; for each transcript command (`show --json`, `show`,
`convert`, `html`) it also times the same work in a process that has already imported the modules the work is
called from (the file's parse, and the conversion or the page, as the command does them), so that the command's
overhead is `command − work`:

    python benchmarks/cli_startup.py                      # this tree
    python benchmarks/cli_startup.py --tree /tmp/kb-old   # another checkout (e.g. `git worktree add /tmp/kb-old
                                                          # <commit>`), to compare before and after
The bytecode cache is on (PYTHONDONTWRITEBYTECODE is removed from the commands' environment): with it off, every
run compiles every module it imports, which is not what an installed command does. What the work imports lazily
(the file's format parser, the writer's atomic-write helpers) is counted as work, as in the command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILE = REPO.parent / "shared/fixtures/transcripts/opencode-export" / \
    "session__curious-harbor__ses_39b4b4b3bffeXCkbhNdUgsq5wv.json"
# runs kernelbench's own entry point from the given tree, whatever is installed
ENTRY = "import sys; sys.path.insert(0, sys.argv.pop(1)); from kernelbench.cli import main; sys.exit(main())"
# each transcript command's work in process: its modules imported first, then the work timed
# (argv: tree, transcript, output path)
WORK = {
    "show": ("from kernelbench.transcripts.loader import load; from kernelbench.transcripts.summary import summarize",
             "summarize(load(sys.argv[2]))"),
    "convert": (("from kernelbench.transcripts.loader import load; "
                 "from kernelbench.transcripts.normalized import write_session"),
                "write_session(load(sys.argv[2]), sys.argv[3])"),
    "html": ("from kernelbench.transcripts.loader import load; from kernelbench.transcripts.viewer import write_page",
             "write_page(load(sys.argv[2]), sys.argv[3])"),
}


def timed(argv: list[str], env: dict[str, str], runs: int, warmup: int) -> list[float]:
    times = []
    for index in range(warmup + runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if index >= warmup:
            times.append(time.perf_counter() - start)
    return times


def work_seconds(command: str, tree: Path, file: Path, out: Path, env: dict[str, str], runs: int) -> list[float]:
    imports, work = WORK[command]
    code = (f"import sys, time; sys.path.insert(0, sys.argv[1]); {imports}; "
            f"t = time.perf_counter(); {work}; print(time.perf_counter() - t)")
    return [float(subprocess.run([sys.executable, "-c", code, str(tree), str(file), str(out)], env=env,
                                 check=True, capture_output=True, text=True).stdout) for _ in range(runs)]


def measure(label: str, argv: list[str], work: tuple[str, Path] | None, tree: Path, args: argparse.Namespace,
            env: dict[str, str]) -> tuple[str, float, float | None]:
    """(label, the command's median seconds, the median seconds of its work in process or None)."""
    times = timed(argv, env, args.runs, args.warmup)
    median = statistics.median(times)
    print(f"  {label:<62} median {median * 1e3:7.1f} ms   min {min(times) * 1e3:7.1f} ms")
    if work is None:
        return label, median, None
    spent = work_seconds(work[0], tree, args.file, work[1], env, max(3, args.runs // 3))
    return label, median, statistics.median(spent)


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
    tree = args.tree.resolve()
    entry = [sys.executable, "-c", ENTRY, str(tree)]
    scratch = Path(tempfile.mkdtemp(prefix="kb-cli-startup-"))
    file = str(args.file)
    size = f"{args.file.stat().st_size / 1e6:.2f} MB"
    rows = [("python -c pass", [sys.executable, "-c", "pass"], None),
            ("kernelbench --help", entry + ["--help"], None),
            ("kernelbench run --help", entry + ["run", "--help"], None),
            (f"kernelbench transcript show FILE --json ({size})", entry + ["transcript", "show", file, "--json"],
             ("show", scratch / "unused")),
            ("kernelbench transcript show FILE", entry + ["transcript", "show", file], ("show", scratch / "unused")),
            ("kernelbench transcript convert FILE -o OUT.jsonl",
             entry + ["transcript", "convert", file, "-o", str(scratch / "cmd.jsonl")],
             ("convert", scratch / "work.jsonl")),
            ("kernelbench transcript html FILE -o DIR", entry + ["transcript", "html", file, "-o",
                                                                  str(scratch / "cmd-html")],
             ("html", scratch / "work-html"))]
    print(f"tree {tree}; median and minimum of {args.runs} runs after {args.warmup} warm-up runs")
    try:
        results = [measure(label, argv, work, tree, args, env) for label, argv, work in rows]
    finally:
        shutil.rmtree(scratch)
    bare = results[0][1]
    print("  overhead beyond the work done in process (and beyond the bare interpreter's start-up too):")
    for label, median, spent in results:
        if spent is not None:
            print(f"    {label:<60} {(median - spent) * 1e3:6.1f} ms ({(median - spent - bare) * 1e3:6.1f} ms); "
                  f"work {spent * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
