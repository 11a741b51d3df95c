"""What the harness itself costs per run, apart from the agent and the grader.

Prints: the start-up cost of the bubblewrap sandbox (a trivial Python program inside vs outside, median of N),
and the wall time of a whole scripted run that writes no solution (workspace, sandboxed agent, transcript, run
directory; no grading), median of a few. Run from the repository root:

    python benchmarks/harness_overhead.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernelbench.harness import sandbox
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.runner import RunRequest, execute_run
from kernelbench.problems.problem import open_problem

REPO = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def sandbox_startup(repeat: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir(), home.mkdir()
        argv = [sys.executable, "-c", "pass"]
        boxed = sandbox.wrap(argv, sandbox.SandboxSpec(workspace=ws, home=home), {"HOME": str(home)})
        plain = timed(lambda: subprocess.run(argv, check=True), repeat)
        inside = timed(lambda: subprocess.run(boxed, check=True), repeat)
    return statistics.median(plain), statistics.median(inside)


def scripted_run(repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sweeps" / "plans").mkdir(parents=True)
        (root / "sweeps" / "plans" / "idle.yaml").write_text("name: idle\nsteps:\n  - run: ls\n")
        problem = open_problem(REPO / "problems" / "04_kahan_softmax")
        request = RunRequest(agent=AgentSpec.parse("scripted:idle"), problem=problem, runs_dir=root / "runs",
                             device="cpu", shapes="smoke",
                             options={"plan_search": [str(root)]})
        return statistics.median(timed(lambda: execute_run(request), repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    plain, inside = sandbox_startup(args.repeat)
    print(f"python -c pass: {plain * 1000:.1f} ms outside, {inside * 1000:.1f} ms inside bubblewrap "
          f"(sandbox start-up {(inside - plain) * 1000:.1f} ms), median of {args.repeat}")
    whole = scripted_run(max(3, args.repeat // 3))
    print(f"whole scripted run without a solution (no grading): {whole:.2f} s, median of {max(3, args.repeat // 3)}")


if __name__ == "__main__":
    main()
