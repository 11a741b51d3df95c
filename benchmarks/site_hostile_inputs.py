#!/usr/bin/env python3
"""Re-create the attacks on the site's addresses, text and folders, and count how many got their effect.

Two parts, each run against the code of a source tree (`--code`, this repository by default), so the same
script measures the build before and after a change:

- The race: a deck with `--runs` extra runs is built `--tries` times, each `python build.py` in its own process,
  while a racer watches for the staging folder's `runs/` (the build is rendering pages) and then swaps the last
  run folder for a link to a folder outside the data folder whose check.log holds a secret. A try counts as an
  effect when the secret reaches the site, as reported when the build names the swapped folder.
- The catalogue: every case of tests/support/hostile.py that carries a `check` of the built site (charts,
  names, addresses, images, terminal escapes) is built and checked; an effect is a check that fails, reported
  means the build named the case's file.

    python benchmarks/site_hostile_inputs.py --tries 50
    python benchmarks/site_hostile_inputs.py --code /tmp/base-src --tries 10   # the code before the change
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench.sitegen.output import STAGING_PREFIX
from tests.support import hostile


def build(code: Path, data: Path, out: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code)}
    return subprocess.run([sys.executable, str(code / "build.py"), "--quiet", "--jobs", "2", "--data", str(data),
                           "--out", str(out)], capture_output=True, text=True, check=False, env=env, cwd=code, timeout=timeout)


# ------------------------------------------------------------------------------------------------ the race


def race_once(code: Path, data: Path, out: Path, victim: Path, outside: Path, aside: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)  # a fresh site: its runs/ appears only once pages are rendered
    swapped_at: list[float] = []
    done = threading.Event()

    def racer() -> None:
        while not done.is_set():
            if any((p / "runs").is_dir() for p in out.parent.glob(f"{STAGING_PREFIX}{out.name}-*")):
                victim.rename(aside)
                os.symlink(outside, victim)
                swapped_at.append(time.perf_counter())
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=racer)
    started = time.perf_counter()
    thread.start()
    try:
        result = build(code, data, out)
    finally:
        done.set()
        thread.join()
        if swapped_at:
            victim.unlink()
            aside.rename(victim)
    leaked = any(hostile.SECRET.encode() in p.read_bytes() for p in out.rglob("*") if p.is_file())
    return {
        "swapped": bool(swapped_at),
        "swapped_after_s": round(swapped_at[0] - started, 2) if swapped_at else None,
        "build_s": round(time.perf_counter() - started, 2),
        "rc": result.returncode,
        "effect": leaked,
        "reported": victim.name in result.stderr and "changed while" in result.stderr,
    }


def race(code: Path, root: Path, runs: int, tries: int) -> list[dict]:
    from tests.support.synthetic import write_deck

    data = root / "data"
    write_deck(data, n_runs=hostile.DECK_RUNS + runs, transcript_bytes=2000)
    victim = hostile.runs_of(data)[-1]
    outside = root / "outside" / "run"
    outside.mkdir(parents=True)
    for name in ("result.json", "solution.py", "benchmark.log"):
        if (victim / name).exists():
            shutil.copy(victim / name, outside / name)
    (outside / "check.log").write_text(f"{hostile.SECRET}\n")
    (outside / "solution.py").write_text(f"# {hostile.SECRET}\n")
    results = []
    for attempt in range(tries):
        outcome = race_once(code, data, root / "site", victim, outside, root / "aside")
        results.append(outcome)
        print(f"try {attempt + 1:3d}: {outcome}", flush=True)
    return results


# ------------------------------------------------------------------------------------------------ the catalogue


def catalogue(code: Path, root: Path) -> list[dict]:
    pristine = hostile.write_pristine(root / "pristine")
    results = []
    for case in [c for c in hostile.CASES if c.check and not c.during]:
        applied = hostile.apply(case, pristine, root / case.name)
        result = build(code, applied.data, applied.out)
        try:
            case.check(applied.out)
            effect = ""
        except AssertionError as exc:
            effect = str(exc)[:160]
        except OSError as exc:
            effect = f"{type(exc).__name__}: {exc}"[:160]
        reported = not case.expect or case.expect in result.stderr
        raw_escape = "\x1b" in result.stderr
        results.append({"case": case.name, "effect": effect, "reported": reported, "rc": result.returncode,
                        "stderr_holds_escape": raw_escape})
        print(f"{case.name:34s} effect={'YES ' + effect if effect else 'no'} reported={reported} "
              f"raw ESC on stderr={raw_escape}", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=REPO, help="the source tree whose build.py is measured")
    parser.add_argument("--runs", type=int, default=600, help="extra runs in the raced deck")
    parser.add_argument("--tries", type=int, default=50)
    parser.add_argument("--skip-race", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = catalogue(args.code.resolve(), Path(tmp) / "catalogue")
        tries = [] if args.skip_race else race(args.code.resolve(), Path(tmp) / "race", args.runs, args.tries)
    print(f"\ncatalogue: {len(cases)} cases, {sum(bool(c['effect']) for c in cases)} with an effect, "
          f"{sum(c['reported'] for c in cases)} reported, "
          f"{sum(c['stderr_holds_escape'] for c in cases)} with a raw ESC on stderr")
    if tries:
        swapped = [t for t in tries if t["swapped"]]
        after = sorted(t["swapped_after_s"] for t in swapped)
        print(f"race: {len(tries)} tries, {len(swapped)} swapped during the build "
              f"(after {after[0] if after else '-'}-{after[-1] if after else '-'} s), "
              f"{sum(t['effect'] for t in tries)} with an effect (the secret published), "
              f"{sum(t['reported'] for t in swapped)} of the swapped reported")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
