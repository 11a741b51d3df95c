#!/usr/bin/env python3
"""The transcript tab's two parts apart: the parse of a run's transcript and the viewer's write, CPU ms each.

Reads the transcripts of the run page benchmark's deck (`benchmarks/run_page_render.py` writes it; --deck), at
most --count of them, into memory, then --repeat times: parses them all from their bytes as the site does
(`transcripts.load(path, data=...)`), then writes each one's viewer into a scratch folder (`write_viewer`).
Prints the best pass of each per transcript, and MB of transcript per CPU-second. The machine is shared: compare
two codes by running this with each on PYTHONPATH in turn, several times.

    PYTHONPATH=. python benchmarks/transcript_tab_parts.py after
    PYTHONPATH=/tmp/before python benchmarks/transcript_tab_parts.py before
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a label for the output line (and the scratch folder)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--deck", type=Path, default=Path("/tmp/kernelbench-run-page-bench/deck-100-200"))
    args = parser.parse_args()

    from kernelbench.transcripts.loader import load
    from kernelbench.transcripts.viewer import write_viewer

    files = sorted(args.deck.glob("runs/*/transcript.jsonl"))[: args.count]
    if not files:
        parser.error(f"no transcripts under {args.deck}/runs: run benchmarks/run_page_render.py first")
    datas = [(path, path.read_bytes()) for path in files]
    mb = sum(len(data) for _, data in datas) / 1e6
    out = Path(f"/tmp/transcript-tab-parts-{args.name}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    parse, view = [], []
    for _ in range(args.repeat):
        cpu = time.process_time()
        sessions = [load(path, data=data) for path, data in datas]
        parse.append(time.process_time() - cpu)
        cpu = time.process_time()
        for number, session in enumerate(sessions):
            write_viewer(session, out / f"t{number}", asset_prefix="../")
        view.append(time.process_time() - cpu)
    n = len(datas)
    print(f"{args.name}: parse {1000 * min(parse) / n:.3f} ms ({mb / min(parse):.0f} MB/CPU-s), "
          f"viewer {1000 * min(view) / n:.3f} ms ({mb / min(view):.0f} MB/CPU-s)")


if __name__ == "__main__":
    main()
