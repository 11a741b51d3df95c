#!/usr/bin/env python3
"""Site build benchmark: a synthetic deck of 1,000 runs carrying ~200 MB of transcripts, under /tmp.

Prints these figures, each measured (never estimated):
  1. full build: wall time of `python build.py` in a subprocess, and the peak resident memory of its whole
     process tree (main process plus render workers, sampled from /proc every 50 ms) and of its largest process;
  2. incremental rebuild after editing one annotation, two ways:
     a. cold: a fresh `python build.py` command (the build's own time and the command's wall time);
     b. warm: a running `python build.py --watch`, from the moment the edited file is written until the
        rebuilt page holding the edit is in place (file-event latency and the debounce included), and the
        rebuild's own time as the watcher reports it;
  3. the leaderboard page's own bytes (HTML + site JS + CSS, without the shared plotly bundle).
Targets (issue 6): ≤ 30 s and ≤ 1.5 GB for 1, ≤ 1 s for 2, ≤ 200 KB for 3, on 2 cores.

    python benchmarks/build_site.py                 # generate (once) and measure
    python benchmarks/build_site.py --runs 200 --transcript-kb 50   # a smaller deck
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def generate(deck: Path, runs: int, transcript_kb: int) -> None:
    from tests.support.synthetic import write_deck

    marker = deck / f".complete-{runs}-{transcript_kb}"
    if marker.exists():
        print(f"deck: reusing {deck}")
        return
    shutil.rmtree(deck, ignore_errors=True)
    start = time.perf_counter()
    write_deck(deck, n_runs=runs, transcript_bytes=transcript_kb * 1024, annotate_every=10)
    marker.touch()
    size = sum(p.stat().st_size for p in deck.rglob("transcript.jsonl"))
    print(
        f"deck: {runs} runs, {size / 1e6:.0f} MB of transcripts written in {time.perf_counter() - start:.0f} s"
    )


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (walked through /proc/<pid>/task/*/children). The
    render workers are forked from the build after it planned the deck, so each one's resident set counts the
    pages it shares with the build as well: this sum counts those pages once per process (`tree_pss` does not)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for current in _tree(pid):
        try:
            with open(f"/proc/{current}/statm") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, ValueError):
            continue
    return total


def tree_pss(pid: int) -> tuple[int, int]:
    """The memory the process tree holds (the sum of its processes' proportional set sizes: a page shared by n
    processes counts 1/n in each), and the largest private memory (Private_Clean + Private_Dirty) of any one of
    its processes other than the build itself, i.e. of a render worker. From /proc/<pid>/smaps_rollup."""
    total = worker_private = 0
    for current in _tree(pid):
        try:
            with open(f"/proc/{current}/smaps_rollup") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line and not line.startswith("0"))
        except (OSError, ValueError):
            continue
        kib = {name: int(value.split()[0]) for name, value in fields.items() if value.strip().endswith("kB")}
        total += kib.get("Pss", 0) * 1024
        if current != pid:
            worker_private = max(worker_private, (kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) * 1024)
    return total, worker_private


def _tree(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(c) for c in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def snapshot_code(target: Path, source: Path = REPO) -> Path:
    """A frozen copy of the code, templates and assets (of this tree, or of `source`: another commit's `git
    archive`, to compare): the working tree may change while the benchmark runs, and any code change (rightly)
    re-renders every page."""
    shutil.rmtree(target, ignore_errors=True)
    for name in ("kernelbench", "templates", "static"):
        shutil.copytree(source / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(source / "build.py", target / "build.py")
    # compiled as an installed or once-run checkout is, so that no build pays for compiling (with
    # PYTHONDONTWRITEBYTECODE set every build would) and none writes __pycache__ folders into the code it reads
    compileall.compile_dir(target, quiet=1)
    return target


def run_build(deck: Path, site: Path, code: Path) -> dict:
    import resource

    cmd = [
        sys.executable,
        str(code / "build.py"),
        "--data",
        str(deck),
        "--out",
        str(site),
        "--quiet",
        "--timings",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=code
    )
    peak = peak_pss = peak_worker = 0
    samples = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        if samples % 4 == 0:  # smaps_rollup walks every mapping: every 200 ms
            pss, worker = tree_pss(proc.pid)
            peak_pss, peak_worker = max(peak_pss, pss), max(peak_worker, worker)
        samples += 1
        time.sleep(0.05)
    wall = time.perf_counter() - start
    output = proc.stdout.read()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"build failed ({proc.returncode}):\n{output}")
    match = re.search(r"in ([\d.]+) s: (\d+) pages, (\d+) rendered", output)
    stages = re.search(r"stages: (.*)", output)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "build": float(match.group(1)),
        "pages": int(match.group(2)),
        "rendered": int(match.group(3)),
        "tree_peak": peak,
        "tree_pss": peak_pss,
        "worker_private": peak_worker,
        "largest_process": after.ru_maxrss * 1024,
        "cpu": cpu,
        "load": max(load, os.getloadavg()[0]),
        "stages": stages.group(1) if stages else "",
    }


def edit_one_annotation(deck: Path) -> Path:
    path = sorted((deck / "annotations").glob("*.yaml"))[0]
    text = path.read_text()
    stamp = f"edited at {time.time_ns()}"
    text = re.sub(
        r"summary: .*", f"summary: Upcasts to fp32 and calls the matmul operator ({stamp}).", text, count=1
    )
    path.write_text(text)
    return path


def edit_one_annotation_with(deck: Path, stamp: str) -> Path:
    path = sorted((deck / "annotations").glob("*.yaml"))[0]
    text = re.sub(r"summary: .*", f"summary: Upcasts to fp32 and calls the matmul operator ({stamp}).",
                  path.read_text(), count=1)
    path.write_text(text)
    return path


def edit_one_run_file(deck: Path) -> Path:
    """Append a comment to one run's solution.py: a file only that run's page shows."""
    path = sorted((deck / "runs").glob("*/solution.py"))[len(list((deck / "annotations").glob("*.yaml"))) + 1]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"# edited at {time.time_ns()}\n")
    return path


def edit_one_result(deck: Path) -> Path:
    """One run's session a second longer in its result.json: the run's line on every board, table and page that
    lists it moves."""
    import json

    path = sorted((deck / "runs").glob("*/result.json"))[2]
    data = json.loads(path.read_text())
    data["session"]["elapsed_s"] = (data["session"].get("elapsed_s") or 0) + 1
    path.write_text(json.dumps(data, indent=1))
    return path


def edit_one_result_of_its_page_only(deck: Path) -> Path:
    """When one run's grading finished, in its result.json: a field its own page alone shows (its result tab)."""
    import json

    path = sorted((deck / "runs").glob("*/result.json"))[3]
    data = json.loads(path.read_text())
    data["grading"]["elapsed_s"] = round((data["grading"].get("elapsed_s") or 0) + 0.5, 3)
    path.write_text(json.dumps(data, indent=1))
    return path


def measure_edits(label: str, deck: Path, site: Path, code: Path, edit, tries: int = 3) -> None:
    """`tries` edits by `edit`, each followed by a new `python build.py`; the fastest is the least disturbed by
    other work on the machine."""
    found = []
    for _ in range(tries):
        edited = edit(deck)
        found.append(run_build(deck, site, code))
    best = min(found, key=lambda r: r["build"])
    print(f"{label} rebuilds (s in the build): " + ", ".join(f"{t['build']:.2f}" for t in found)
          + "; CPU-s: " + ", ".join(f"{t['cpu']:.2f}" for t in found)
          + "; load average: " + ", ".join(f"{t['load']:.1f}" for t in found))
    print(
        f"{label} ({edited.relative_to(deck)}): {best['build']:.2f} s in the build, {best['wall']:.2f} s wall "
        f"(with interpreter start and imports), {best['cpu']:.2f} CPU-s, {best['rendered']} of {best['pages']} "
        f"pages rendered, peak RSS {best['tree_peak'] / 2**20:.0f} MiB; load average {best['load']:.1f}"
    )
    print(f"  stages: {best['stages']}")


def compare(deck: Path, sites: dict[str, Path], codes: dict[str, Path], watch: bool = True) -> None:
    """Two codes on one deck in one sitting: each builds its own site from scratch, then every edit is followed by a
    rebuild with each code in turn (the order alternating), so both see the same edits under the same load."""
    for label in sites:
        full = run_build(deck, sites[label], codes[label])
        print(f"[{label}] full build: {full['wall']:.2f} s wall ({full['build']:.2f} s in the build), "
              f"{full['cpu']:.1f} CPU-s (all processes), peak RSS {full['tree_peak'] / 2**20:.0f} MiB (process tree), "
              f"{full['largest_process'] / 2**20:.0f} MiB (largest process), peak PSS {full['tree_pss'] / 2**20:.0f} "
              f"MiB (process tree), largest render worker's private memory {full['worker_private'] / 2**20:.0f} MiB; "
              f"load average {full['load']:.1f}")
        print(f"  stages: {full['stages']}")
    edits = [("no change", None), *[("one annotation edited", edit_one_annotation)] * 3,
             *[("one run's solution.py edited", edit_one_run_file)] * 3,
             *[("one result.json field its run page alone shows edited", edit_one_result_of_its_page_only)] * 2,
             *[("one result.json edited", edit_one_result)] * 2]
    for step, (what, edit) in enumerate(edits):
        if edit is not None:
            edit(deck)
        order = list(sites) if step % 2 == 0 else list(reversed(sites))
        for label in order:
            found = run_build(deck, sites[label], codes[label])
            print(f"[{label}] {what}: {found['build']:.2f} s in the build, {found['wall']:.2f} s wall, "
                  f"{found['cpu']:.2f} CPU-s, {found['rendered']} of {found['pages']} pages rendered, peak RSS "
                  f"{found['tree_peak'] / 2**20:.0f} MiB; load average {found['load']:.1f}")
            print(f"  stages: {found['stages']}")
    if not watch:
        return
    for turn in range(2):  # each code watches twice, in turn, so both meet the same load
        for label in sites:
            watched = measure_watch(deck, sites[label], codes[label], tries=3)
            print(f"[{label}] --watch, one annotation edited, edit written -> rebuilt page in place: "
                  + ", ".join(f"{seen:.2f}" for seen, _, _ in watched) + " s; the watcher's own rebuild: "
                  + ", ".join(f"{built:.2f}" for _, built, _ in watched) + " s, "
                  + ", ".join(f"{cpu:.2f}" for _, _, cpu in watched) + f" CPU-s; load average {os.getloadavg()[0]:.1f}")


def measure_watch(deck: Path, site: Path, code: Path, tries: int = 5) -> list[tuple[float, float, float]]:
    """(edit written -> edited page in place, the watcher's own build seconds, its CPU-s) for each edit."""
    import queue
    import threading

    cmd = [
        sys.executable, str(code / "build.py"), "--data", str(deck), "--out", str(site), "--watch", "--quiet",
        "--timings",
    ]
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=code)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def wait_for(pattern: str, timeout: float = 600) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                match = re.search(pattern, lines.get(timeout=1))
            except queue.Empty:
                continue
            if match:
                return match
        raise SystemExit(f"the watcher did not print {pattern!r}")

    results = []
    try:
        wait_for("watching for changes")
        for i in range(tries):
            time.sleep(3.0)  # an author's pace; the previous site is being deleted in the background meanwhile
            stamp = f"watched edit {i} {time.time_ns()}"
            page = site / "runs" / sorted((deck / "annotations").glob("*.yaml"))[0].stem / "index.html"
            before = _inode(page)
            start = time.perf_counter()
            edit_one_annotation_with(deck, stamp)
            while True:  # a rebuilt page is a new file: poll its inode (cheap), then read it once
                now = _inode(page)
                if now != before:
                    before = now
                    try:
                        if stamp in page.read_text(encoding="utf-8"):
                            break
                    except OSError:
                        pass
                time.sleep(0.005)
            seen = time.perf_counter() - start
            built = float(wait_for(r"in ([\d.]+) s: \d+ pages").group(1))
            cpu = float(wait_for(r"; ([\d.]+) CPU-s in the building process").group(1))
            results.append((seen, built, cpu))
    finally:
        proc.terminate()
        proc.wait()
    return results


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def leaderboard_bytes(site: Path) -> dict:
    parts = {
        "index.html": site / "index.html",
        "site.js": site / "static" / "site.js",
        "site.css": site / "static" / "site.css",
    }
    sizes = {name: p.stat().st_size for name, p in parts.items()}
    sizes["plotly.min.js (shared, not counted)"] = (site / "static" / "plotly.min.js").stat().st_size
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--transcript-kb", type=int, default=200)
    parser.add_argument("--deck", type=Path, default=Path("/tmp/kernelbench-bench/deck"))
    parser.add_argument("--full-only", action="store_true", help="measure the full build only (for iterating)")
    parser.add_argument("--code", type=Path, default=REPO,
                        help="measure the code of this folder (another commit's `git archive`, say) instead of "
                             "this tree's")
    parser.add_argument("--site", type=Path, help="where to build (default: beside the deck)")
    parser.add_argument("--no-watch", action="store_true", help="leave out the watching build")
    parser.add_argument("--compare", type=Path, metavar="CODE",
                        help="measure this code (another commit's `git archive`) against --code in one sitting: "
                             "each builds its own site, then each edit is rebuilt by both in turn")
    args = parser.parse_args()
    generate(args.deck, args.runs, args.transcript_kb)
    if args.compare:
        sites = {label: args.deck.parent / f"site-{label}" for label in ("before", "after")}
        for site in sites.values():
            shutil.rmtree(site, ignore_errors=True)
            shutil.rmtree(site.parent / f".spare-{site.name}", ignore_errors=True)
        codes = {"before": snapshot_code(args.deck.parent / "code-before", args.compare),
                 "after": snapshot_code(args.deck.parent / "code-after", args.code)}
        time.sleep(2.5)
        print(f"machine: {len(os.sched_getaffinity(0))} cores, load average before the builds {os.getloadavg()[0]:.1f}")
        compare(args.deck, sites, codes, watch=not args.no_watch)
        return
    site = args.site or args.deck.parent / "site"
    shutil.rmtree(site, ignore_errors=True)
    shutil.rmtree(site.parent / f".spare-{site.name}", ignore_errors=True)
    code = snapshot_code(site.parent / f"code-{site.name}", args.code)
    # a build trusts the status of a file only when it changed more than two seconds before the build began (a
    # file written within one clock tick of being looked at could change again unseen): a code copy made a
    # moment before the first build would keep the next build from ending early, which no checkout sees
    time.sleep(2.5)
    print(
        f"machine: {len(os.sched_getaffinity(0))} cores, load average before the builds "
        f"{os.getloadavg()[0]:.1f} (other work on the machine slows the wall-clock figures; CPU-s do not depend on it)"
    )

    full = run_build(args.deck, site, code)
    print(
        f"full build: {full['wall']:.2f} s wall ({full['build']:.2f} s in the build), {full['pages']} pages, "
        f"{full['cpu']:.1f} CPU-s (all processes), peak RSS {full['tree_peak'] / 2**20:.0f} MiB (process tree), "
        f"{full['largest_process'] / 2**20:.0f} MiB (largest process); load average {full['load']:.1f}"
    )
    print(f"  memory held: peak PSS {full['tree_pss'] / 2**20:.0f} MiB (process tree, shared pages counted once), "
          f"largest render worker's private memory {full['worker_private'] / 2**20:.0f} MiB")
    print(f"  stages: {full['stages']}")
    if args.full_only:
        return

    same = run_build(args.deck, site, code)
    print(
        f"no-change rebuild: {same['build']:.2f} s in the build, {same['wall']:.2f} s wall, "
        f"{same['cpu']:.2f} CPU-s, {same['rendered']} pages rendered; load average {same['load']:.1f}"
    )

    # three edits, three rebuilds each: the fastest is the least disturbed by other work on the machine (the
    # first rebuild after the full build also copies the whole site: no spare site exists yet)
    measure_edits("one annotation edited", args.deck, site, code, edit_one_annotation)
    measure_edits("one run's solution.py edited", args.deck, site, code, edit_one_run_file)
    measure_edits("one result.json field its run page alone shows edited", args.deck, site, code,
                  edit_one_result_of_its_page_only, tries=2)
    measure_edits("one result.json edited", args.deck, site, code, edit_one_result, tries=2)
    if args.no_watch:
        return

    watched = measure_watch(args.deck, site, code)
    print(
        "warm incremental (python build.py --watch), edit written -> rebuilt page in place: "
        + ", ".join(f"{seen:.2f}" for seen, _, _ in watched)
        + " s; the watcher's own rebuild: "
        + ", ".join(f"{built:.2f}" for _, built, _ in watched)
        + " s, "
        + ", ".join(f"{cpu:.2f}" for _, _, cpu in watched)
        + f" CPU-s (median {sorted(s for s, _, _ in watched)[len(watched) // 2]:.2f} s end to end); "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    sizes = leaderboard_bytes(site)
    own = sum(v for k, v in sizes.items() if "plotly" not in k)
    print("leaderboard page: " + ", ".join(f"{k} {v / 1024:.1f} KiB" for k, v in sizes.items()))
    print(f"leaderboard page's own HTML+JS+CSS: {own / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
