"""What one poll of a large runs folder costs in watch mode (kernelbench.sitegen.server.RunFolderPoller): N run
folders, each with a result.json, made in a temporary folder; the median wall and CPU time of `signature()`.

    python3 benchmarks/watch_poll_cost.py [--folders 10000] [--polls 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelbench.sitegen.server import POLL_S, RunFolderPoller


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folders", type=int, default=10000)
    parser.add_argument("--polls", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kb-poll-") as tmp:
        runs = Path(tmp) / "runs"
        for index in range(args.folders):
            (runs / f"run_{index:06d}").mkdir(parents=True)
            (runs / f"run_{index:06d}" / "result.json").write_text("{}")
        poller = RunFolderPoller(runs, lambda: None)
        walls, cpus = [], []
        for _ in range(args.polls):
            wall, cpu = time.perf_counter(), time.process_time()
            seen = poller.signature()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert len(seen) == args.folders + 1
    wall, cpu = statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3
    print(f"{args.folders} run folders: one poll {wall:.1f} ms wall, {cpu:.1f} ms CPU (median of {args.polls}); "
          f"at one poll every {POLL_S:g} s that is {cpu / (POLL_S * 1e3) * 100:.1f}% of a core "
          f"(load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
