"""Transcript parse + render throughput, peak memory, first-screen size and time-to-interactive, against the targets.

    python benchmarks/transcripts_throughput.py                 # everything (a few minutes on 2 cores)
    python benchmarks/transcripts_throughput.py --size-mb 20 --skip-browser

Every timing is taken with both clocks at once: process CPU time (what the code costs, robust to other jobs on a
shared machine) and wall time (what a reader waits on this machine as loaded now); the best of --repeat runs after
a warm-up. Figures printed:
  1. MB/s per fixture folder (parse, render, both), beside orjson alone decoding the same lines (the floor for any
     Python JSON reader on this machine).
  2. The same on --size-mb concatenations of real JSON Lines fixtures (written under /tmp), one pass in each of
     --fresh-runs fresh processes (every run listed, the median judged), with the peak resident memory relative to
     the input size.
  3. The first-screen HTML size (what the run page embeds before the reader asks for more) per fixture.
  4. Time until the viewer is interactive for a 50 MB transcript containing one 10 MB line, in headless Chromium,
     and what the page then spends on a few actions, including building every later chunk's events (chunks hold
     views as data, turned into elements by transcript.js, so that part of rendering happens in the browser).
  5. A summary table: each target of the issue, the figure measured, met or not.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "transcripts"
WORK = Path(tempfile.gettempdir()) / "kernelbench-transcript-bench"
JSONL_FOLDERS = ("claude-session", "claude-stream", "codex-rollout", "codex-exec", "kimi-wire")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


SUMMARY: list[tuple[str, str, str, bool]] = []    # (target, measured, how, met)


def timed(fn, repeat: int) -> tuple[float, float]:
    """Best (CPU seconds, wall seconds) of `repeat` runs."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    return cpu, wall


def orjson_only(path: Path) -> None:
    with open(path, "rb") as handle:
        for line in handle:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass


def measure_files(files: list[Path], repeat: int) -> dict:
    from kernelbench.transcripts import load
    from kernelbench.transcripts.viewer import write_viewer

    size = sum(p.stat().st_size for p in files)
    out = WORK / "render"
    t_json = [0.0, 0.0]
    t_parse = [0.0, 0.0]
    t_render = [0.0, 0.0]
    for path in files:
        _add(t_json, timed(functools.partial(orjson_only, path), repeat))
        _add(t_parse, timed(functools.partial(load, path), repeat))
        session = load(path)
        _add(t_render, timed(functools.partial(write_viewer, session, out / "transcript", asset_prefix=""), repeat))
    mb = size / 1e6
    row = {"MB": mb}
    for i, clock in enumerate(("cpu", "wall")):
        row[clock] = {"orjson": mb / t_json[i], "parse": mb / t_parse[i], "render": mb / t_render[i],
                      "both": mb / (t_parse[i] + t_render[i])}
    return row


def _add(into: list[float], pair: tuple[float, float]) -> None:
    into[0] += pair[0]
    into[1] += pair[1]


HEAD = (f"{'input':30} {'MB':>6} | {'CPU time: orjson':>16} {'parse':>7} {'render':>7} {'both':>7} | "
        f"{'wall: parse':>11} {'render':>7} {'both':>7}  (MB/s)")


def _row(name: str, row: dict) -> str:
    c, w = row["cpu"], row["wall"]
    return (f"{name:30} {row['MB']:6.2f} | {c['orjson']:16.0f} {c['parse']:7.1f} {c['render']:7.1f} {c['both']:7.1f} | "
            f"{w['parse']:11.1f} {w['render']:7.1f} {w['both']:7.1f}")


def fixture_table(repeat: int) -> None:
    from kernelbench.transcripts import load

    for path in sorted(FIXTURES.glob("*/*")):        # warm-up: imports, lazily built validators
        load(path)
    print(f"\n1. Real fixtures (best of {repeat}; orjson = decoding the lines alone)")
    print(HEAD)
    groups = {folder.name: sorted(p for p in folder.iterdir() if p.is_file()) for folder in sorted(FIXTURES.iterdir())}
    groups["ALL JSONL"] = [p for name in JSONL_FOLDERS for p in groups.get(name, []) if p.suffix == ".jsonl"]
    groups["ALL"] = sorted(p for p in FIXTURES.glob("*/*") if p.is_file())
    for name, files in groups.items():
        row = measure_files(files, repeat)
        print(_row(name, row))
        if name == "ALL JSONL":
            _target("parse + render >= 120 MB/s, JSONL fixtures", row)


def _target(label: str, row: dict) -> None:
    cpu, wall = row["cpu"]["both"], row["wall"]["both"]
    SUMMARY.append((label, f"{cpu:.1f} MB/s CPU time, {wall:.1f} MB/s wall", "", cpu >= 120))


# ---------------------------------------------------------------------------------------------- big file

def concatenation(folder: str, size_mb: int) -> Path:
    """Real JSON Lines files of one format, repeated until the file reaches size_mb."""
    path = WORK / f"{folder}-{size_mb}MB.jsonl"
    if path.exists() and path.stat().st_size >= size_mb * 1e6:
        return path
    sources = [p.read_bytes() for p in sorted((FIXTURES / folder).glob("*.jsonl"))]
    sources = [s if s.endswith(b"\n") else s + b"\n" for s in sources]
    written = 0
    with open(path, "wb") as handle:
        while written < size_mb * 1e6:
            for data in sources:
                handle.write(data)
                written += len(data)
    return path


CHILD = """
import resource, sys, time
from pathlib import Path
from kernelbench.transcripts import load
from kernelbench.transcripts.viewer import write_viewer
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
c0, w0 = time.process_time(), time.perf_counter()
session = load(sys.argv[1])
c1, w1 = time.process_time(), time.perf_counter()
write_viewer(session, Path(sys.argv[2]), asset_prefix="")
c2, w2 = time.process_time(), time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base * 1024, peak * 1024, c1 - c0, c2 - c1, w1 - w0, w2 - w1, sum(1 for _ in session.walk()))
"""


def big_file(size_mb: int, fresh_runs: int) -> None:
    """Each concatenation parsed and rendered in `fresh_runs` fresh processes, one pass each: the row shown and
    judged is the median run (this 2-core box varies about +-10 % between processes), every run is listed."""
    print(f"\n2. {size_mb} MB concatenations of real fixtures ({fresh_runs} fresh processes each, one pass each; "
          "median run shown)")
    print(HEAD.replace("CPU time: orjson", "events"))
    peaks = []
    for folder in ("claude-session", "codex-rollout"):
        path = concatenation(folder, size_mb)
        runs = sorted((_fresh_pass(path) for _ in range(fresh_runs)), key=lambda r: r[0]["cpu"]["both"])
        row, peak, base = runs[len(runs) // 2]
        print(_row(folder, row))
        print(f"   {folder:15} every run, parse + render MB/s of CPU time: "
              + ", ".join(f"{r[0]['cpu']['both']:.1f}" for r in runs))
        _target(f"parse + render >= 120 MB/s, {row['MB']:.0f} MB {folder} (median of {fresh_runs})", row)
        peaks.append((folder, max(r[1] for r in runs), base, path.stat().st_size))
    for folder, peak, base, size in peaks:
        ratio = peak / size
        print(f"   {folder:15} peak RSS {peak / 1e6:5.0f} MB = {ratio:.2f}x input "
              f"({(peak - base) / size:.2f}x above the {base / 1e6:.0f} MB the interpreter had before parsing)")
        SUMMARY.append((f"peak memory < 2x input, {folder}", f"{ratio:.2f}x", "peak RSS / input size", ratio < 2))


def _fresh_pass(path: Path) -> tuple[dict, float, float]:
    """One load + write_viewer in a new interpreter: (row of MB/s, peak RSS bytes, RSS before parsing)."""
    out = WORK / "big-render"
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(out)], capture_output=True,
                          text=True, check=True)
    base, peak, c_parse, c_render, w_parse, w_render, events = (float(x) for x in done.stdout.split())
    mb = path.stat().st_size / 1e6
    row = {"MB": mb, "cpu": {"orjson": events, "parse": mb / c_parse, "render": mb / c_render,
                             "both": mb / (c_parse + c_render)},
           "wall": {"parse": mb / w_parse, "render": mb / w_render, "both": mb / (w_parse + w_render)}}
    return row, peak, base


# ---------------------------------------------------------------------------------------------- page sizes

def first_screens() -> None:
    from kernelbench.transcripts import load
    from kernelbench.transcripts.viewer import write_viewer

    print("\n3. First-screen HTML (embedded in the run page) for the largest fixtures")
    largest = 0
    for path in sorted(FIXTURES.glob("*/*"), key=lambda p: -p.stat().st_size)[:4]:
        out = WORK / "screens" / path.stem
        shutil.rmtree(out, ignore_errors=True)
        html = write_viewer(load(path), out / "transcript", asset_prefix="")
        files = list((out / "transcript").iterdir())
        print(f"{path.parent.name}/{path.name[:44]:44} {path.stat().st_size / 1e6:5.2f} MB -> first screen "
              f"{len(html.encode()) / 1e3:6.1f} KB, {len(files)} chunk/blob files "
              f"({sum(f.stat().st_size for f in files) / 1e6:.2f} MB loaded on demand)")
        largest = max(largest, len(html.encode()))
    SUMMARY.append(("run page of the largest fixtures < 1 MB before the reader asks",
                    f"{largest / 1e3:.1f} KB", "largest first screen of the 4 biggest", largest < 1e6))


# ---------------------------------------------------------------------------------------------- browser

def fifty_mb_transcript() -> Path:
    """50 MB of real Claude Code lines with one tool result of 10 MB on a single line."""
    path = WORK / "claude-50MB-10MB-line.jsonl"
    if path.exists():
        return path
    source = FIXTURES / "claude-session" / "claude-35b94415-dd5e-4481-b179-5ae683b817cd.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    call = {"type": "assistant", "sessionId": "big", "uuid": "big-call", "timestamp": "2026-02-26T18:00:00Z",
            "message": {"id": "msg_big", "model": "claude-sonnet-4-6", "role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "cat huge.log"}}]}}
    result = {"type": "user", "sessionId": "big", "uuid": "big-result", "timestamp": "2026-02-26T18:00:09Z",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                                                       "content": ("x" * 99 + "\n") * 100_000}]}}
    with open(path, "wb") as handle:
        written, inserted = 0, False
        while written < 50e6:
            for line in lines:
                if written >= 50e6:
                    break
                handle.write(line)
                written += len(line)
                if not inserted and written > 5e6:
                    big = orjson.dumps(call) + b"\n" + orjson.dumps(result) + b"\n"
                    handle.write(big)
                    written += len(big)
                    inserted = True
    return path


def time_to_interactive() -> None:
    from playwright.sync_api import sync_playwright

    from kernelbench.transcripts import load
    from kernelbench.transcripts.viewer import write_page

    path = fifty_mb_transcript()
    site = WORK / "tti"
    shutil.rmtree(site, ignore_errors=True)
    start = time.perf_counter()
    session = load(path)
    write_page(session, site)
    build = time.perf_counter() - start
    big_id = next(e.id for e in session.walk() if e.kind.value == "tool_result" and e.call_id == "toolu_big")
    page_kb = (site / "index.html").stat().st_size / 1e3
    handler = functools.partial(_Quiet, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        runs = [_one_visit(browser, server.server_port, big_id) for _ in range(3)]
        browser.close()
    server.shutdown()
    best = min(runs, key=lambda r: r["ready_ms"])
    print(f"\n4. {path.stat().st_size / 1e6:.0f} MB transcript with a 10 MB line: built in {build:.1f} s, "
          f"page {page_kb:.0f} KB")
    for key, label in (("ready_ms", "viewer interactive (data-ready, from navigation start)"),
                       ("click_ms", "then: expand an event, round trip"),
                       ("deep_ms", "then: deep link to the last event (loads its chunk only)"),
                       ("big_ms", "then: deep link to the 10 MB tool result"),
                       ("blob_ms", "then: expand it (10 MB loaded, the first 1 MB laid out)"),
                       ("all_ms", f"then: load all chunks ({best['shown']:,} events built by the page)")):
        print(f"   {label:58} best {best[key]:7.0f} ms   (runs: {', '.join(f'{r[key]:.0f}' for r in runs)})")
    SUMMARY.append(("50 MB transcript interactive < 2 s (headless Chromium)", f"{best['ready_ms']:.0f} ms",
                    f"best of {len(runs)}; worst {max(r['ready_ms'] for r in runs):.0f} ms",
                    max(r["ready_ms"] for r in runs) < 2000))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _one_visit(browser, port: int, big_id: int) -> dict:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"http://127.0.0.1:{port}/index.html")
    page.wait_for_selector(".kbt[data-ready]", state="attached")
    ready = float(page.get_attribute(".kbt", "data-ready"))     # stamped by the viewer's init itself
    start = time.perf_counter()
    page.locator("details.ev-thinking summary").first.click()
    page.wait_for_selector("details.ev-thinking[open]", state="attached")
    click = (time.perf_counter() - start) * 1000
    last = page.evaluate("JSON.parse(document.querySelector('.kbt-index').textContent).events")
    start = time.perf_counter()
    page.evaluate(f"location.hash = '#e-{last}'")
    page.wait_for_selector(f"#e-{last}.kbt-target", state="attached", timeout=120_000)
    deep = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    page.evaluate(f"location.hash = '#e-{big_id}'")
    page.wait_for_selector(f"#e-{big_id}.kbt-target", state="attached", timeout=120_000)
    reveal_big = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    page.locator(f"#e-{big_id} button.kbt-more-text").evaluate("b => b.click()")
    page.wait_for_function(f"document.querySelector('#e-{big_id} .kbt-more-text[data-shown]')", timeout=120_000)
    blob = (time.perf_counter() - start) * 1000
    # later chunks are views that the page builds into elements: what building all of them costs the browser
    start = time.perf_counter()
    page.evaluate("document.querySelector('.kbt-load-all') && document.querySelector('.kbt-load-all').click()")
    page.wait_for_selector(".kbt-sentinel[data-done]", state="attached", timeout=300_000)
    load_all = (time.perf_counter() - start) * 1000
    shown = page.evaluate("document.querySelectorAll('.kbt-events [id^=e-]').length")
    page.close()
    return {"ready_ms": ready, "click_ms": click, "deep_ms": deep, "big_ms": reveal_big, "blob_ms": blob,
            "all_ms": load_all, "shown": shown}


def summary() -> None:
    print("\n5. Targets (issue 5, Performance)")
    for target, measured, how, met in SUMMARY:
        print(f"   {'met    ' if met else 'NOT MET'}  {target:58} {measured:40} {how}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=100, help="size of the concatenation (default 100)")
    parser.add_argument("--fresh-runs", type=int, default=5,
                        help="fresh processes per concatenation; the median run is judged (default 5)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per fixture; the best is kept")
    parser.add_argument("--skip-browser", action="store_true", help="leave out the Chromium measurement")
    parser.add_argument("--cpu", action="store_true", help="accepted for old command lines: both clocks are always "
                                                          "reported, targets are judged on CPU time")
    args = parser.parse_args()
    if not FIXTURES.is_dir():
        print(f"no fixtures at {FIXTURES}", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    import os
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"targets judged on process CPU time, work dir {WORK}")
    fixture_table(args.repeat)
    big_file(args.size_mb, args.fresh_runs)
    first_screens()
    if not args.skip_browser:
        time_to_interactive()
    summary()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
