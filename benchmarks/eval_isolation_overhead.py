"""What the candidate's sandbox costs: a process start inside bubblewrap against one outside, and whole gradings
with KERNELBENCH_ISOLATION=bwrap against =none, interleaved so both see the same machine load.

    python benchmarks/eval_isolation_overhead.py [--starts 20] [--gradings 3] [--solution PATH]

Prints medians and their ratio. CPU by default (`--device cuda` on a GPU machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench.eval.isolation import isolation_for, sandbox_env, sandboxed  # noqa: E402  (after the path)


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def process_starts(count: int, device: str) -> tuple[float, float]:
    bwrap = isolation_for(device).bwrap
    if bwrap is None:
        raise SystemExit(f"no sandbox here: {isolation_for(device).note}")
    work = Path(tempfile.mkdtemp(prefix="kb-isolation-bench-"))
    plain_argv = [sys.executable, "-c", "pass"]
    boxed_argv = sandboxed(plain_argv, bwrap, workdir=work, device=device)
    plain, boxed = [], []
    for _ in range(count):
        plain.append(timed(plain_argv, dict(os.environ)))
        boxed.append(timed(boxed_argv, sandbox_env(dict(os.environ), work)))
    return statistics.median(plain), statistics.median(boxed)


def gradings(count: int, solution: Path, problem: Path, device: str) -> tuple[float, float]:
    argv = [sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", str(problem), "--device", device,
            "--shapes", "smoke" if device == "cpu" else "full", "--json"]
    times: dict[str, list[float]] = {"none": [], "bwrap": []}
    for _ in range(count):
        for mode in times:
            times[mode].append(timed(argv, {**os.environ, "KERNELBENCH_ISOLATION": mode}, cwd=REPO))
    return statistics.median(times["none"]), statistics.median(times["bwrap"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--gradings", type=int, default=3)
    parser.add_argument("--solution", type=Path, default=REPO / "solutions" / "eager" / "04_kahan_softmax.py")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    plain, boxed = process_starts(args.starts, args.device)
    print(f"process start, median of {args.starts}: unsandboxed {plain * 1e3:.1f} ms, sandboxed {boxed * 1e3:.1f} ms "
          f"(+{(boxed - plain) * 1e3:.1f} ms, ratio {boxed / plain:.2f})", flush=True)
    if args.gradings > 0:
        problem = REPO / "problems" / args.solution.stem
        none, bwrap = gradings(args.gradings, args.solution, problem, args.device)
        print(f"whole grading of {args.solution.name}, median of {args.gradings}: unsandboxed {none:.2f} s, "
              f"sandboxed {bwrap:.2f} s (ratio {bwrap / none:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
