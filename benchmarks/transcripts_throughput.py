"""Transcript parse + render throughput, peak memory, first-screen size and time-to-interactive.

    python benchmarks/transcripts_throughput.py                 # everything (about 2 minutes on 2 cores)
    python benchmarks/transcripts_throughput.py --size-mb 20 --skip-browser

Figures printed:
  1. MB/s per fixture folder (parse, render, both), best of --repeat runs, after a warm-up; beside them the speed
     of orjson alone decoding the same lines, as this machine's floor for any Python JSON reader.
  2. The same on a --size-mb concatenation of real JSON Lines fixtures (written under /tmp), with the peak
     resident memory of a fresh process doing parse + render, relative to the input size.
  3. The first-screen HTML size (what the run page embeds before the reader asks for more) per fixture.
  4. Time until the viewer is interactive for a 50 MB transcript containing one 10 MB line, in headless Chromium.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
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


CLOCK = time.perf_counter        # --cpu switches to process CPU time (robust to other jobs on the machine)


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = CLOCK()
        fn()
        best = min(best, CLOCK() - start)
    return best


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
    t_json = sum(timed(functools.partial(orjson_only, p), repeat) for p in files)
    t_parse = t_render = 0.0
    for path in files:
        t_parse += timed(functools.partial(load, path), repeat)
        session = load(path)
        t_render += timed(functools.partial(write_viewer, session, out / "transcript", asset_prefix=""), repeat)
    mb = size / 1e6
    return {"MB": round(mb, 2), "orjson_only_MBps": round(mb / t_json, 1), "parse_MBps": round(mb / t_parse, 1),
            "render_MBps": round(mb / t_render, 1), "parse_render_MBps": round(mb / (t_parse + t_render), 1)}


def fixture_table(repeat: int) -> None:
    from kernelbench.transcripts import load

    for path in sorted(FIXTURES.glob("*/*")):        # warm-up: imports, lazily built validators
        load(path)
    print(f"\n1. Real fixtures (best of {repeat})")
    print(f"{'folder':18} {'MB':>6} {'orjson':>8} {'parse':>8} {'render':>8} {'both':>8}   (MB/s)")
    groups = {folder.name: sorted(p for p in folder.iterdir() if p.is_file()) for folder in sorted(FIXTURES.iterdir())}
    groups["ALL JSONL"] = [p for name in JSONL_FOLDERS for p in groups.get(name, []) if p.suffix == ".jsonl"]
    groups["ALL"] = sorted(p for p in FIXTURES.glob("*/*") if p.is_file())
    for name, files in groups.items():
        row = measure_files(files, repeat)
        print(f"{name:18} {row['MB']:6.2f} {row['orjson_only_MBps']:8.1f} {row['parse_MBps']:8.1f} "
              f"{row['render_MBps']:8.1f} {row['parse_render_MBps']:8.1f}")


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
clock = time.process_time if sys.argv[3] == "cpu" else time.perf_counter
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = clock(); session = load(sys.argv[1]); t1 = clock()
write_viewer(session, Path(sys.argv[2]), asset_prefix=""); t2 = clock()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base * 1024, peak * 1024, t1 - t0, t2 - t1, sum(1 for _ in session.walk()))
"""


def big_file(size_mb: int) -> None:
    print(f"\n2. {size_mb} MB concatenations of real fixtures (fresh process each)")
    for folder in ("claude-session", "codex-rollout"):
        path = concatenation(folder, size_mb)
        out = WORK / "big-render"
        shutil.rmtree(out, ignore_errors=True)
        mode = "cpu" if CLOCK is time.process_time else "wall"
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(out), mode], capture_output=True,
                              text=True, check=True)
        base, peak, t_parse, t_render, events = done.stdout.split()
        size = path.stat().st_size
        mb = size / 1e6
        extra = (int(peak) - int(base)) / size
        print(f"{folder:15} {mb:6.1f} MB, {int(events):,} events: parse {mb / float(t_parse):6.1f} MB/s, render "
              f"{mb / float(t_render):6.1f} MB/s, both {mb / (float(t_parse) + float(t_render)):6.1f} MB/s; "
              f"peak RSS {int(peak) / 1e6:.0f} MB = {int(peak) / size:.2f}x input "
              f"({extra:.2f}x above the {int(base) / 1e6:.0f} MB the interpreter had before parsing)")


# ---------------------------------------------------------------------------------------------- page sizes

def first_screens() -> None:
    from kernelbench.transcripts import load
    from kernelbench.transcripts.viewer import write_viewer

    print("\n3. First-screen HTML (embedded in the run page) for the largest fixtures")
    for path in sorted(FIXTURES.glob("*/*"), key=lambda p: -p.stat().st_size)[:4]:
        out = WORK / "screens" / path.stem
        shutil.rmtree(out, ignore_errors=True)
        html = write_viewer(load(path), out / "transcript", asset_prefix="")
        files = list((out / "transcript").iterdir())
        print(f"{path.parent.name}/{path.name[:44]:44} {path.stat().st_size / 1e6:5.2f} MB -> first screen "
              f"{len(html.encode()) / 1e3:6.1f} KB, {len(files)} chunk/blob files "
              f"({sum(f.stat().st_size for f in files) / 1e6:.2f} MB loaded on demand)")


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
                       ("blob_ms", "then: expand it (10 MB loaded, the first 1 MB laid out)")):
        print(f"   {label:58} best {best[key]:7.0f} ms   (runs: {', '.join(f'{r[key]:.0f}' for r in runs)})")


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
    page.close()
    return {"ready_ms": ready, "click_ms": click, "deep_ms": deep, "big_ms": reveal_big, "blob_ms": blob}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=100, help="size of the concatenation (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per fixture; the best is kept")
    parser.add_argument("--skip-browser", action="store_true", help="leave out the Chromium measurement")
    parser.add_argument("--cpu", action="store_true",
                        help="time with process CPU time instead of wall clock (MB per CPU-second)")
    args = parser.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    if not FIXTURES.is_dir():
        print(f"no fixtures at {FIXTURES}", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    import os
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"clock: {'process CPU time' if args.cpu else 'wall'}, work dir {WORK}")
    fixture_table(args.repeat)
    big_file(args.size_mb)
    first_screens()
    if not args.skip_browser:
        time_to_interactive()
    print(json.dumps({"done": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
