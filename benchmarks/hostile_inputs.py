#!/usr/bin/env python3
"""Build the site from every hostile input of the catalogue (tests/support/hostile.py) and record what
the build did: exit code, the exception of a traceback, wall time, peak memory, pages written, whether the data
folder changed, whether a secret from outside reached the site, and whether --strict failed.

Each case gets a fresh copy of a small synthetic deck and two builds (plain, then --strict), each
`python build.py` in its own process group under a memory cap (RLIMIT_AS) and a time cap. Two more checks
follow: the mode of every file and folder of a built site, and whether the render workers outlive a build
killed with SIGKILL.

    python benchmarks/hostile_inputs.py                      # every case, table on stdout
    python benchmarks/hostile_inputs.py --only laughs --json benchmarks/results/hostile_inputs.json
    python benchmarks/hostile_inputs.py --mem-cap-gib 3 --time-cap 60 --label before

Outcomes: built (exit 0/1, the site written, the bad file named in the report), silent (built, the file not
named, --strict passed), refused (exit 2 before any work, nothing written), crash (a traceback or an unexpected
exit), memory (MemoryError or killed at the memory cap), hang (killed at the time cap). Flags: DATA (the data
folder changed), LEAK (the secret reached the site).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support import hostile  # noqa: E402


@dataclass
class Build:
    rc: int | None
    signal: int | None
    seconds: float
    peak_mib: float
    exception: str  # the last line of a traceback, "" without one
    timed_out: bool
    named: bool  # the report holds the case's expected text (the bad file's path)
    stderr_tail: str


@dataclass
class Outcome:
    case: str
    group: str
    what: str
    outcome: str
    plain: Build
    strict: Build | None
    pages: int
    data_changed: list[str] = field(default_factory=list)
    leaked: list[str] = field(default_factory=list)
    strict_failed: bool | None = None
    as_expected: bool = False


# The build is started by this small launcher, not forked from the benchmark: Linux records a process's peak
# memory from the moment it was forked, so a build forked from the benchmark (which holds tens of MiB of corrupted
# files by then) would report the benchmark's memory as its own. The launcher (a fresh interpreter) caps the
# address space, starts the build, and writes the build's exit status and peak RSS.
LAUNCHER = """
import json, os, resource, sys
cap, report = int(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as handle:
    json.dump({"status": status, "maxrss_kib": usage.ru_maxrss}, handle)
"""


def run_build(args: list[str], mem_cap: int, time_cap: float, expect: str = "",
              needs_line: bool = False) -> Build:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        err_path, report = Path(tmp) / "stderr", Path(tmp) / "status.json"
        with open(err_path, "wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(mem_cap), str(report), str(REPO / "build.py"), "--quiet",
                 "--jobs", "2", *args],
                stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, cwd=REPO,
            )
            try:
                process.wait(timeout=time_cap)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            seconds = time.perf_counter() - start
            _kill_group(process.pid)  # a hung build, or workers a build left behind
            process.wait()
        text = err_path.read_text(encoding="utf-8", errors="replace")
        status = json.loads(report.read_text()) if report.exists() else {"status": 9, "maxrss_kib": 0}
    rc = os.waitstatus_to_exitcode(status["status"])
    return Build(
        rc=rc if rc >= 0 else None,
        signal=-rc if rc < 0 else None,
        seconds=round(seconds, 2),
        peak_mib=round(status["maxrss_kib"] / 1024, 1),
        exception=_exception(text),
        timed_out=timed_out,
        named=bool(expect) and any(expect in path and (line or not needs_line) for path, line in reported(text)),
        stderr_tail=text[-600:],
    )


REPORTED = re.compile(r"^(?:error|warning): (.+?)(?::(\d+))?: ", re.M)


def reported(stderr: str) -> list[tuple[str, str | None]]:
    """(path, line) of every problem the build printed (`error: PATH[:LINE]: message`)."""
    return [(m.group(1), m.group(2)) for m in REPORTED.finditer(stderr)]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _exception(stderr: str) -> str:
    """The exception line of the last traceback in `stderr` ("" without one)."""
    at = stderr.rfind("Traceback (most recent call last)")
    if at < 0:
        return ""
    for line in stderr[at:].splitlines()[1:]:
        if line and not line.startswith(" ") and re.match(r"[\w.]+(Error|Exception|Exit|Interrupt)\b", line):
            return line[:200]
    return "Traceback"


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root` by type and content, without following links or opening special files."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            key = str(path.relative_to(root))
            if stat.S_ISLNK(mode):
                found[key] = "link:" + os.readlink(path)
            elif stat.S_ISREG(mode):
                found[key] = hashlib.blake2b(path.read_bytes(), digest_size=8).hexdigest()
            elif stat.S_ISDIR(mode):
                found[key] = "dir"
            else:
                found[key] = f"special:{stat.S_IFMT(mode)}"
    return found


def pages_in(out: Path, before: dict[str, str]) -> int:
    if not out.is_dir():
        return 0
    return sum(1 for p in out.rglob("*.html") if str(p) not in before)


def secret_in(out: Path, secret: str) -> list[str]:
    if not out.is_dir() or out.is_symlink():
        return []
    hits = []
    needle = secret.encode()
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
            hits.append(str(path.relative_to(out)))
    return hits


def run_case(case: hostile.Case, pristine: Path, workdir: Path, mem_cap: int, time_cap: float,
             strict: bool) -> Outcome:
    root = workdir / case.name
    applied = hostile.apply(case, pristine, root)
    args = applied.build_args()
    out = Path(args[args.index("--out") + 1])
    outputs = (applied.out, root / "site-strict")
    before = snapshot(root)
    plain = run_build(args, mem_cap, time_cap, case.expect, case.line)
    after = snapshot(root)
    changed = sorted(k for k in set(before) | set(after)
                     if before.get(k) != after.get(k) and not _is_output(root / k, outputs))
    pages = pages_in(out, {str(root / k) for k in before})
    leaked = secret_in(out, case.secret) if case.secret else []
    leaked += _check_failed(case, out) if pages else []
    strict_build = None
    if strict and not case.refused and not plain.timed_out:  # a hung build would only hang again
        args[args.index("--out") + 1] = str(root / "site-strict")
        strict_build = run_build(args + ["--strict"], mem_cap, time_cap, case.expect, case.line)
    result = Outcome(case.name, case.group, case.what, classify(case, plain, pages), plain, strict_build, pages,
                     changed, leaked)
    if strict_build is not None:
        result.strict_failed = strict_build.rc != 0  # killed or hung counts as failing, not as passing
    result.as_expected = expected(case, result)
    return result


def _check_failed(case: hostile.Case, out: Path) -> list[str]:
    """The case's own check of the built site ("" when the attack got no effect)."""
    if case.check is None:
        return []
    try:
        case.check(out)
    except (AssertionError, OSError) as exc:
        return [f"check: {str(exc)[:200]}"]
    return []


def _is_output(path: Path, outputs: tuple[Path, ...]) -> bool:
    """The build's own output beside the data (and its staging folders), which the snapshot also sees."""
    if any(part.startswith((".building-", ".retired-")) for part in path.parts):
        return True
    return any(path == own or own in path.parents for own in outputs)


def classify(case: hostile.Case, build: Build, pages: int) -> str:
    if build.timed_out:
        return "hang"
    if "MemoryError" in build.exception or build.signal == signal.SIGKILL:
        return "memory"
    if build.exception or build.signal or build.rc not in (0, 1, 2):
        return "crash"
    if build.rc == 2:
        return "refused"
    if not pages:
        return "crash"
    return "built" if build.named or not case.expect else "silent"


def expected(case: hostile.Case, outcome: Outcome) -> bool:
    """What the build must do: refuse an overlapping --out touching nothing; otherwise build the rest of the
    site, name the file, fail --strict, keep the data as it was and the secret out of the site."""
    if outcome.data_changed or outcome.leaked:
        return False
    if case.refused:
        return outcome.outcome == "refused"
    strict_ok = outcome.strict_failed is not False or not case.expect
    return outcome.outcome == "built" and strict_ok


def check_site_modes(pristine: Path, workdir: Path, mem_cap: int, time_cap: float) -> dict:
    out = workdir / "modes" / "site"
    build = run_build(["--data", str(pristine), "--out", str(out)], mem_cap, time_cap)
    modes: dict[str, int] = {}
    for path in [out, *out.rglob("*")]:
        mode = oct(stat.S_IMODE(os.lstat(path).st_mode))
        kind = "dir" if path.is_dir() else "file"
        modes[f"{kind} {mode}"] = modes.get(f"{kind} {mode}", 0) + 1
    return {"rc": build.rc, "site_root": oct(stat.S_IMODE(out.stat().st_mode)) if out.exists() else None,
            "modes": modes}


def worst_cases(pristine: Path, workdir: Path, mem_cap: int, time_cap: float) -> dict:
    """The heaviest file of each kind the caps let through, built alone: what one file can cost the build."""
    from kernelbench import inputs

    def densest_transcript(data: Path) -> None:
        # the smallest event the normalized format has, repeated up to the cap: the most events per byte
        line = b'{"type":"event","kind":"user","text":"x"}\n'
        header = b'{"type":"kernelbench-session","version":1}\n'
        count = (inputs.TRANSCRIPT.max_bytes - len(header)) // len(line)
        (hostile.target_run(data) / "transcript.jsonl").write_bytes(header + line * count)

    def writeup(data: Path) -> None:  # the slowest markdown found for markdown-it: unclosed brackets
        path = hostile.target_writeup(data)
        text = path.read_text()
        path.write_text(text + "[" * (inputs.WRITEUP.max_bytes - len(text.encode()) - 1) + "\n")

    def annotation(data: Path) -> None:  # the most YAML nodes per byte: a list of one-letter items
        path = hostile.target_annotation(data)
        text = path.read_text() + "auditor:\n"
        path.write_text(text + "- x\n" * ((inputs.ANNOTATION.max_bytes - len(text.encode())) // 4))

    def log(data: Path) -> None:  # a shown file at its cap, highlighted as Python
        (hostile.target_run(data) / "solution.py").write_text("def f(x):\n    return x * 2\n" * 40_000)

    found = {}
    for name, corrupt in (("transcript at the cap, densest events", densest_transcript),
                          ("writeup at the cap, unclosed brackets", writeup),
                          ("annotation at the cap, one-letter list items", annotation),
                          ("solution.py shown at its cap", log)):
        root = workdir / "worst" / name.split()[0]
        shutil.copytree(pristine, root / "data", symlinks=True)
        corrupt(root / "data")
        build = run_build(["--data", str(root / "data"), "--out", str(root / "site")], mem_cap, time_cap)
        found[name] = {"rc": build.rc, "seconds": build.seconds, "peak_mib": build.peak_mib,
                       "exception": build.exception}
        print(f"{name:48} rc {build.rc} {build.seconds:7.2f} s {build.peak_mib:8.1f} MiB {build.exception}")
    return found


def check_workers_die(workdir: Path, time_cap: float) -> dict:
    """SIGKILL a build while its worker pool renders, and see whether the workers outlive it."""
    from tests.support.synthetic import write_deck

    deck = workdir / "kill" / "data"
    write_deck(deck, n_runs=48, transcript_bytes=400_000)
    process = subprocess.Popen(
        [sys.executable, str(REPO / "build.py"), "--quiet", "--jobs", "2", "--data", str(deck),
         "--out", str(workdir / "kill" / "site")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=REPO)
    workers: list[int] = []
    start = time.perf_counter()
    while time.perf_counter() - start < time_cap and process.poll() is None:
        workers = _python_children(process.pid)
        if workers:
            break
        time.sleep(0.05)
    if not workers:
        process.kill()
        process.wait()
        return {"workers_seen": 0, "note": "the build finished before its workers were seen"}
    time.sleep(0.3)
    workers = _python_children(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(3)
    alive = [pid for pid in workers if _alive(pid)]
    for pid in alive:  # the benchmark started them (through the build): end them by id
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"workers_seen": len(workers), "alive_3s_after_sigkill": len(alive)}


def _python_children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            cmd = (entry / "cmdline").read_bytes()
            if b"python" in cmd:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def hostile_case(name: str) -> hostile.Case:
    return next(c for c in hostile.CASES if c.name == name)


def print_table(outcomes: list[Outcome], header: bool = True) -> None:
    if not header:
        return _rows(outcomes)
    print(f"{'case':32} {'group':13} {'outcome':8} ok {'rc':>3} {'strict':>6} {'s':>7} {'MiB':>7}  "
          "exception / flags")
    _rows(outcomes)


def _rows(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        flags = " ".join(f for f, on in (("DATA", o.data_changed), ("LEAK", o.leaked)) if on)
        strict = "-" if o.strict is None else ("fails" if o.strict_failed else "PASSES")
        rc = o.plain.rc if o.plain.rc is not None else f"s{o.plain.signal}"
        ok = "ok" if o.as_expected else "NO"
        print(f"{o.case:32} {o.group:13} {o.outcome:8} {ok} {rc!s:>3} {strict:>6} {o.plain.seconds:7.2f} "
              f"{o.plain.peak_mib:7.1f}  {o.plain.exception[:70]} {flags}")


def compare(before_path: Path, after_path: Path) -> str:
    """Two measurements (JSON files written by --json) side by side: counts, then a table case by case."""
    before = json.loads(before_path.read_text())
    after = json.loads(after_path.read_text())
    old = {c["case"]: c for c in before["cases"]}
    counts = ["| | before | after |", "| --- | --- | --- |"]
    totals = [counted(before["cases"]), counted(after["cases"])]
    for key in totals[1]:
        counts.append(f"| {key} | {totals[0].get(key, '—')} | {totals[1][key]} |")
    rows = ["| case | what | before | after |", "| --- | --- | --- | --- |"]
    for case in after["cases"]:
        what = case["what"].replace("|", "\\|")
        rows.append(f"| {case['case']} | {what} | {_cell(old.get(case['case']))} | {_cell(case)} |")
    return "\n".join(counts) + "\n\n" + "\n".join(rows) + "\n"


def counted(cases: list[dict]) -> dict:
    """The figures of a measurement, from its cases as written to JSON."""
    def peak(c: dict) -> float:
        return max(c["plain"]["peak_mib"], (c["strict"] or {}).get("peak_mib", 0))

    inputs_ = [c for c in cases if not hostile_case(c["case"]).refused]
    worst = max(cases, key=peak)
    return {
        "cases": len(cases),
        "as the issue asks (refused, or built with the file reported and --strict failing)":
            sum(c["as_expected"] for c in cases),
        "crashes (traceback, memory, hang)": sum(c["outcome"] in ("crash", "memory", "hang") for c in cases),
        "of which hangs": sum(c["outcome"] == "hang" for c in cases),
        "of which out of memory (3 GiB cap)": sum(c["outcome"] == "memory" for c in cases),
        "silent (built, the bad file not reported)": sum(c["outcome"] == "silent" for c in cases),
        "data folder changed": sum(bool(c["data_changed"]) for c in cases),
        "secret from outside on the site": sum(bool(c["leaked"]) for c in cases),
        "--strict passed on a bad input": sum(c["strict_failed"] is False and bool(hostile_case(c["case"]).expect)
                                              for c in inputs_),
        "worst peak memory": f"{peak(worst):.0f} MiB ({worst['case']})",
        "slowest build": "{1:.1f} s ({0})".format(*max(((c["case"], c["plain"]["seconds"]) for c in cases),
                                                      key=lambda x: x[1])),
    }


def _cell(case: dict | None) -> str:
    if case is None:
        return "—"
    build = case["plain"]
    what = case["outcome"]
    if build["exception"]:
        what += f": `{build['exception'][:60]}`"
    flags = [f for f, on in (("data changed", case["data_changed"]), ("secret leaked", case["leaked"])) if on]
    if case.get("strict_failed") is False and hostile_case(case["case"]).expect:
        flags.append("--strict passed")
    tail = f", {', '.join(flags)}" if flags else ""
    return f"{what}{tail} ({build['seconds']:.1f} s, {build['peak_mib']:.0f} MiB)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    parser.add_argument("--mem-cap-gib", type=float, default=3.0, help="address-space cap per build (GiB)")
    parser.add_argument("--time-cap", type=float, default=90.0, help="seconds before a build counts as hung")
    parser.add_argument("--no-strict", action="store_true", help="skip the --strict builds")
    parser.add_argument("--no-checks", action="store_true", help="skip the site-mode and worker checks")
    parser.add_argument("--worst-cases", action="store_true",
                        help="also build the heaviest file of each kind the caps let through")
    parser.add_argument("--label", default="", help="a name for this measurement (before/after)")
    parser.add_argument("--json", type=Path, default=None, help="write every outcome and the summary here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE.json", "AFTER.json"),
                        help="print two measurements side by side as a markdown table, and build nothing")
    args = parser.parse_args(argv)
    if args.compare:
        print(compare(*args.compare), end="")
        return 0
    mem_cap = int(args.mem_cap_gib * (1 << 30))
    # a case acting while the build runs needs a racer beside the build: benchmarks/site_hostile_inputs.py
    cases = [c for c in hostile.CASES if args.only in c.name and c.during is None]
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        workdir = Path(tmp)
        pristine = hostile.write_pristine(workdir / "pristine")
        outcomes = []
        for case in cases:
            outcome = run_case(case, pristine, workdir, mem_cap, args.time_cap, not args.no_strict)
            outcomes.append(outcome)
            print_table([outcome], header=len(outcomes) == 1)
            sys.stdout.flush()
        checks = {}
        if not args.no_checks and not args.only:
            checks["site_modes"] = check_site_modes(pristine, workdir, mem_cap, args.time_cap)
            checks["workers"] = check_workers_die(workdir, args.time_cap)
        if args.worst_cases:
            checks["worst_cases"] = worst_cases(pristine, workdir, mem_cap, args.time_cap)
    summary = counted([asdict(o) for o in outcomes]) if outcomes else {}
    print("\nsummary:", json.dumps(summary, indent=1))
    if checks:
        print("checks:", json.dumps(checks, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"label": args.label, "mem_cap_gib": args.mem_cap_gib, "time_cap_s": args.time_cap,
                   "summary": summary, "checks": checks, "cases": [asdict(o) for o in outcomes]}
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
