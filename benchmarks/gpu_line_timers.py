"""Every baseline line (eager, compiled, SOTA) of every problem on every shape, timed three ways in one GPU run:
through the grader's own protocol (`kernelbench baselines`: the judge and bench stages, fresh inputs, L2 flush,
launch cover), and by two timers that share no code with it: `triton.testing.do_bench` (its own L2 clear, median)
and CUDA-graph replay (one graph per input set, a 256 MiB clear before each replay, events around the replay
alone, so the host's launch work is outside the interval by construction). It prints the ratio grader/timer per
shape and explains every ratio outside 0.95-1.05 with what was measured beside it: the host's time to issue one
call against the device's time for it (a call the host cannot issue faster than the device runs it is timed as
the host's time by the grader, see portable.timing.host_bound_sample), and whether the call could be captured.

    python benchmarks/gpu_line_timers.py --out $OUT [--problems all|01_fp8_gemm,...] [--lines eager,compiled,sota]
        [--write-baselines] [--budget-s 520]

Writes OUT/line_timers.json (every figure) and, with --write-baselines, the lines measured through the grader
into problems/<id>/baselines/<gpu>.json and OUT/baselines.tar.gz.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import sys
import tarfile
import time
import traceback
from types import SimpleNamespace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

AGREEMENT = (0.95, 1.05)
CLEAR_BYTES = 256 << 20


def deck(selected: str) -> list[Path]:
    dirs = sorted(p for p in (REPO / "problems").iterdir() if (p / "problem.yaml").is_file())
    if selected == "all":
        return dirs
    by_name = {d.name: d for d in dirs}
    return [by_name[name] for name in selected.split(",") if name in by_name]


# ------------------------------------------------------------------------------------------------- independent

def build_line(problem, line: str, shape: dict, seed: int, device):
    """The line's module as the grader builds it: the reference's parameters drawn with the shape's seed, loaded
    into the library module; the compiled line is torch.compile of the reference."""
    import torch

    from kernelbench.problems.loader import load_solution

    kwargs = problem.reference.get_init_kwargs(shape)
    torch.manual_seed(seed)
    with torch.device(device):
        reference = problem.reference.Model(**kwargs)
    reference = reference.to(device).eval()
    if line == "eager":
        return reference
    if line == "compiled":
        from kernelbench.problems.baselines import COMPILED_LINE_MODE

        return torch.compile(reference, mode=COMPILED_LINE_MODE)
    entry = problem.spec.sota[0]
    module = load_solution(problem.directory / entry.module, "sota")
    model = module.Model(**kwargs)
    model.load_state_dict(reference.state_dict(), strict=True)
    return model.to(device).eval()


def do_bench_ms(fn) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=50, rep=300, return_mode="median"))


def graph_replay_ms(fn, device, trials: int = 40) -> float | None:
    """Median of replays of one captured call, each after a 256 MiB clear; None where capture is refused."""
    import torch

    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    try:
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    except Exception:
        torch.cuda.synchronize(device)
        return None
    clear = torch.empty(CLEAR_BYTES, dtype=torch.uint8, device=device)
    samples = []
    for i in range(trials + 5):
        clear.fill_(i % 200 + 1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if i >= 5:
            samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def host_issue_ms(fn, device, trials: int = 30) -> float:
    """How long the host takes to issue one call (the device kept busy first, so no wait is inside it)."""
    import torch

    samples = []
    for _ in range(trials):
        torch.cuda.synchronize(device)
        torch.cuda._sleep(2_000_000)  # ~1 ms of device work queued ahead: the call's launches never block
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1e3)
    torch.cuda.synchronize(device)
    return statistics.median(samples)


def graph_idle_ms(fn, device, trials: int = 20, idle_s: float = 0.003) -> float | None:
    """Graph replays as above, each after the GPU has idled a few milliseconds, as it does between the grader's
    calls (fresh inputs are drawn on the host): a power-hungry kernel runs at a higher clock after a pause than
    back to back, so the two replay timers bracket the grader's figure."""
    import torch

    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    except Exception:
        torch.cuda.synchronize(device)
        return None
    clear = torch.empty(CLEAR_BYTES, dtype=torch.uint8, device=device)
    samples = []
    for i in range(trials + 3):
        torch.cuda.synchronize(device)
        time.sleep(idle_s)
        clear.fill_(i % 200 + 1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if i >= 3:
            samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def loaded_problem(folder: Path) -> SimpleNamespace:
    """The problem opened, with its reference imported once: what the independent timers build each line from."""
    from kernelbench.problems.problem import open_problem

    problem = open_problem(folder)
    return SimpleNamespace(spec=problem.spec, reference=problem.load_reference(), directory=problem.folder)


def independent_problem(problem_dir: Path, lines: tuple[str, ...], deadline: float) -> dict:
    """Every (line, shape) of one problem timed by the independent timers, in this (child) process: a refused
    graph capture can leave torch's CUDA generator unusable for the rest of a process, so each problem gets its
    own, and within it every graph capture comes after the timers that need no graph."""
    import torch

    device = torch.device("cuda")
    problem = loaded_problem(problem_dir)
    seed = problem.spec.seeds[0]
    rows: dict[str, dict] = {}
    for line in lines:
        if line == "sota" and not problem.spec.sota:
            continue
        for index, shape in enumerate(problem.spec.shapes):
            key = f"{line}:{index}"
            if time.monotonic() > deadline:
                rows[key] = {"skipped": "budget"}
                continue
            try:
                rows[key] = time_without_graphs(problem, line, shape, seed, device)
            except Exception as exc:
                rows[key] = {"independent_error": f"{type(exc).__name__}: {exc}"[:400]}
                torch.cuda.synchronize(device)
    for line in lines:
        for index, shape in enumerate(problem.spec.shapes):
            row = rows.get(f"{line}:{index}")
            if row is None or "do_bench_ms" not in row or time.monotonic() > deadline:
                continue
            try:
                row.update(time_with_graphs(problem, line, shape, seed, device))
            except Exception as exc:
                row["graph_error"] = f"{type(exc).__name__}: {exc}"[:400]
    return rows


def _call(problem, line: str, shape: dict, seed: int, device):
    """One call of the line on the shape's first seed's inputs, as a function of nothing."""
    model = build_line(problem, line, shape, seed, device)
    inputs = problem.reference.get_inputs(shape, seed, device)
    return functools.partial(model, *inputs)


def _release() -> None:
    import torch

    gc.collect()
    torch.cuda.empty_cache()


def time_without_graphs(problem, line: str, shape: dict, seed: int, device) -> dict:
    import torch

    call = _call(problem, line, shape, seed, device)
    with torch.no_grad():
        for _ in range(3):
            call()
        torch.cuda.synchronize(device)
        row = {"do_bench_ms": do_bench_ms(call), "host_issue_ms": host_issue_ms(call, device)}
    del call
    _release()
    return row


def time_with_graphs(problem, line: str, shape: dict, seed: int, device) -> dict:
    import torch

    call = _call(problem, line, shape, seed, device)
    with torch.no_grad():
        row = {"graph_ms": graph_replay_ms(call, device)}
        if row["graph_ms"] is not None:
            row["graph_idle_ms"] = graph_idle_ms(call, device)
    del call
    _release()
    return row


def run_independent(problem_dir: Path, lines: tuple[str, ...], seconds: float) -> dict:
    import subprocess

    command = [sys.executable, __file__, "--independent", str(problem_dir), "--lines", ",".join(lines),
               "--budget-s", str(seconds)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"the independent timers ran past {seconds + 60:.0f} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------- grader

def grader_lines(problem_dir: Path, lines: tuple[str, ...], limits: dict) -> dict:
    from kernelbench.eval.baselines import measure_baselines

    return measure_baselines(problem_dir, lines=lines, limits=limits)


def explain(row: dict) -> str:
    graded, timers = row.get("grader_ms"), [row.get("do_bench_ms"), row.get("graph_ms")]
    ratios = [graded / t for t in timers if graded and t]
    if not ratios or all(AGREEMENT[0] <= r <= AGREEMENT[1] for r in ratios):
        return ""
    idle = row.get("graph_idle_ms")
    if idle and AGREEMENT[0] <= graded / idle <= AGREEMENT[1] and idle < min(t for t in timers if t):
        return (f"clock: replayed after an idle pause, as the grader's calls run, it takes {idle * 1e3:.0f} us "
                f"(ratio {graded / idle:.3f}); back to back the GPU runs it at a lower clock")
    device_ms = min(t for t in timers if t)
    host = row.get("host_issue_ms") or 0.0
    if host > device_ms and abs(graded - host) / host < 0.15:
        return (f"host-bound: the host takes {host * 1e3:.0f} us to issue the call, the device "
                f"{device_ms * 1e3:.0f} us to run it; the grader counts the longer")
    if row.get("graph_ms") is None:
        return "no CUDA graph (capture refused); do_bench only"
    return "unexplained"


def measure_problem(problem_dir: Path, lines: tuple[str, ...], args, report: dict, written: set) -> None:
    from kernelbench.eval.baselines import write_baselines
    from kernelbench.problems.loader import load_problem_spec

    spec = load_problem_spec(problem_dir)
    remaining = args.deadline - time.monotonic()
    limits = {"bench": max(60.0, 0.3 * remaining / len(lines)), "reference": max(120.0, 0.3 * remaining)}
    started = time.monotonic()
    graded = grader_lines(problem_dir, lines, limits)
    rows = report.setdefault(spec.id, {})
    rows["grader_s"] = time.monotonic() - started
    if args.write_baselines:
        written.add(write_baselines(problem_dir, graded, merge=True))
    started = time.monotonic()
    independent = run_independent(problem_dir, lines, max(30.0, args.deadline - time.monotonic() - 10))
    rows["independent_s"] = time.monotonic() - started
    if "error" in independent:
        rows["independent_error"] = independent["error"]
        print(f"{spec.id}: independent timers failed: {independent['error']}")
    for line in lines:
        measured = graded.lines.get(line)
        by_index = {s.index: s for s in (measured.shapes if measured else [])}
        rows[line] = {"available": bool(measured and measured.available), "source": measured.source if measured
                      else "", "reason": (measured.reason if measured else "")[:400], "shapes": []}
        for index, shape in enumerate(spec.shapes):
            row = {"index": index, "shape": shape,
                   "grader_ms": by_index[index].median_ms if index in by_index else None,
                   "grader_method": by_index[index].timing_method if index in by_index else None,
                   **independent.get(f"{line}:{index}", {})}
            for timer in ("do_bench_ms", "graph_ms", "graph_idle_ms"):
                if row.get(timer) and row["grader_ms"]:
                    row["ratio_" + timer[:-3]] = row["grader_ms"] / row[timer]
            row["explanation"] = explain(row)
            rows[line]["shapes"].append(row)
            print_row(spec.id, line, row)


def print_row(problem: str, line: str, row: dict) -> None:
    def ms(key: str) -> str:
        value = row.get(key)
        return f"{value * 1e3:9.1f}" if isinstance(value, float) else f"{'-':>9}"

    def ratio(key: str) -> str:
        value = row.get(key)
        flag = "" if value is None or AGREEMENT[0] <= value <= AGREEMENT[1] else " *"
        return f"{value:6.3f}{flag}" if value is not None else f"{'-':>6}"

    print(f"{problem:26} {line:8} shape {row['index']}  grader {ms('grader_ms')} us  do_bench {ms('do_bench_ms')} us"
          f"  graph {ms('graph_ms')} us  graph after idle {ms('graph_idle_ms')} us  host {ms('host_issue_ms')} us"
          f"  ratio(do_bench) {ratio('ratio_do_bench')}  ratio(graph) {ratio('ratio_graph')}  "
          f"{row.get('explanation') or row.get('independent_error') or row.get('graph_error', '')}",
          flush=True)


def pack(out: Path | None, written: set) -> None:
    if out and written:
        with tarfile.open(out / "baselines.tar.gz", "w:gz") as tar:
            for path in sorted(written):
                tar.add(path, arcname=str(Path(path).relative_to(REPO)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--problems", default="all")
    parser.add_argument("--lines", default="eager,compiled,sota")
    parser.add_argument("--write-baselines", action="store_true")
    parser.add_argument("--budget-s", type=float, default=520.0)
    parser.add_argument("--independent", type=Path, help=argparse.SUPPRESS)  # the child: one problem's timers
    args = parser.parse_args()
    args.deadline = time.monotonic() + args.budget_s
    lines = tuple(args.lines.split(","))
    if args.independent:
        print(json.dumps(independent_problem(args.independent, lines, args.deadline)))
        return 0
    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "agreement": AGREEMENT}
    written: set = set()
    for problem_dir in deck(args.problems):
        if time.monotonic() > args.deadline - 20:
            print(f"{problem_dir.name}: skipped, budget spent")
            continue
        try:
            measure_problem(problem_dir, lines, args, report.setdefault("problems", {}), written)
        except Exception:
            report.setdefault("errors", {})[problem_dir.name] = traceback.format_exc()[-3000:]
            print(f"{problem_dir.name}: failed\n{report['errors'][problem_dir.name]}")
        if args.out:
            (args.out / "line_timers.json").write_text(json.dumps(report, indent=1, default=str))
            pack(args.out, written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
