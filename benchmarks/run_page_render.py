#!/usr/bin/env python3
"""The render of run pages, alone: MB of transcript per CPU-second, and where that CPU time goes.

A small synthetic deck (tests/support/synthetic.py) of --runs runs, each with a --transcript-kb transcript, is
written under /tmp and planned once; then every run page is rendered --repeat times into a scratch folder, in
this one process (no pool), as the build renders it (`pipeline._render_one`: the transcript parsed, the viewer's
chunks written, the highlighted file tabs, the template). Printed: the CPU seconds and wall seconds of the best
pass, the MB of transcript rendered per CPU-second, the CPU seconds of planning the deck as a first build does
(which hashes the run files the render does not hash itself), and with --profile the functions taking the most
time (cProfile, sorted by own time and by cumulative time). The machine is shared: CPU seconds vary with what
else runs (the best of --repeat passes is printed); compare two codes in one sitting, alternating.

    python benchmarks/run_page_render.py                      # 16 runs of 200 KB, best of 3 passes
    python benchmarks/run_page_render.py --profile --top 40   # where the time goes
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def make_deck(deck: Path, runs: int, transcript_kb: int) -> None:
    from tests.support.synthetic import write_deck

    marker = deck / f".complete-{runs}-{transcript_kb}"
    if marker.exists():
        return
    shutil.rmtree(deck, ignore_errors=True)
    write_deck(deck, n_runs=runs, transcript_bytes=transcript_kb * 1024, annotate_every=4)
    marker.touch()


def plan(deck: Path):
    from kernelbench.sitegen.manifest import FileHasher
    from kernelbench.sitegen.pipeline import BuildConfig
    from kernelbench.sitegen.plan import plan_site

    config = BuildConfig(data_dir=deck, out_dir=deck.parent / "site")
    return plan_site(config, FileHasher()), config


def render_pass(pages, env, staging: Path) -> None:
    import inspect

    from kernelbench.sitegen.pipeline import _render_one

    # (the code before the render hashed files itself took no templates hash: the benchmark measures either)
    with_hash = "tpl_hash" in inspect.signature(_render_one).parameters
    for page in pages:
        page.digest = ""  # fingerprinted afresh, as in a build
        _render_one(page, env, "templates", staging) if with_hash else _render_one(page, env, staging)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--transcript-kb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print cProfile's figures of one more pass")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kernelbench-run-page-bench"))
    args = parser.parse_args()

    from kernelbench.sitegen.render import make_environment

    deck = args.work / f"deck-{args.runs}-{args.transcript_kb}"
    make_deck(deck, args.runs, args.transcript_kb)
    plan_cpu = float("inf")
    for _ in range(args.repeat):  # as a first build plans: nothing recorded before
        cpu0 = time.process_time()
        site, config = plan(deck)
        plan_cpu = min(plan_cpu, time.process_time() - cpu0)
    pages = [p for p in site.pages if p.kind == "run"]
    transcripts = sum((deck / "runs" / p.title / "transcript.jsonl").stat().st_size for p in pages)
    env = make_environment(config.templates_dir)
    best_cpu = best_wall = float("inf")
    for _ in range(args.repeat):
        staging = args.work / "staging"
        shutil.rmtree(staging, ignore_errors=True)  # every pass renders into an empty folder, as a first build
        staging.mkdir(parents=True)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        render_pass(pages, env, staging)
        best_cpu = min(best_cpu, time.process_time() - cpu0)
        best_wall = min(best_wall, time.perf_counter() - wall0)
    mb = transcripts / 1e6
    print(f"{len(pages)} run pages, {mb:.1f} MB of transcripts; best of {args.repeat} passes: "
          f"{best_cpu:.3f} CPU-s, {best_wall:.3f} s wall, {1000 * best_cpu / len(pages):.2f} CPU-ms per page, "
          f"{mb / best_cpu:.1f} MB of transcript per CPU-second")
    print(f"planning them (a first build's plan of this deck, which hashes what the render does not): "
          f"{plan_cpu:.3f} CPU-s; plan and render together {mb / (plan_cpu + best_cpu):.1f} MB per CPU-second")
    if args.profile:
        staging = args.work / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        profiler = cProfile.Profile()
        profiler.runcall(render_pass, pages, env, staging)
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
