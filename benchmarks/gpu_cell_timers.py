"""Published cells of another benchmark's board, timed side by side on one GPU: the grader's timing protocol
(portable.timing, under each input protocol) against timers that share no code with it, on the same inputs.

Per cell and shape, in a child process of its own (a refused graph capture can spoil a process), unconfined:
- the grader's timed loop as the bench stage runs it (L2 flush, launch cover, graph replay below 0.05 ms where
  the replay is faithful, fresh values in the same tensors), then the short eager loops of the other input
  protocols (new tensors; the same tensors): for each, the median device interval, the median of the host's
  time issuing the call and how many calls were host-bound;
- `triton.testing.do_bench` on one input set (its own L2 clear), and rotating over the shape's input sets;
- the protocol kernelbench.com's harness describes (a 128 MiB clear, a synchronise, events around the call, the
  same tensors every call: the published figures' protocol);
- a CUDA graph of one call replayed after a 256 MiB clear (the host's launch work outside the interval by
  construction), and the host's time to issue one call.

    python benchmarks/gpu_cell_timers.py --cells FILE --out DIR [--budget-s 300]
        [--board LEADERBOARD.json --solutions DIR --deck DIR]   (defaults: the carried .foreign copy)
    python benchmarks/gpu_cell_timers.py --report DIR/cell_timers.json ...   (a markdown table with readings)

Writes DIR/cell_timers.json (every figure) and prints one line per shape. Only the timing is looked at: a cell's
correctness is the grader's business (every timed output here is checked loosely, to flag a stale replay).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

if TYPE_CHECKING:
    from kernelbench.problems.problem import Problem

FOREIGN = REPO / ".foreign" / "kernelbench.com"
PUBLISHED_CLEAR_BYTES = 128 << 20
INPUT_SETS = 4


def locate(cell_id: str, board: Path, solutions: Path, deck: Path) -> tuple[Problem, Path]:
    from kernelbench.harness.regrade import plan_cells
    from kernelbench.results.published import load_published_board

    for job in plan_cells(load_published_board(board), solutions, deck):
        if job.cell.run_id == cell_id:
            if job.solution is None or job.opened is None:
                raise LookupError(f"{cell_id}: no solution file or no problem folder")
            return job.opened, job.solution
    raise LookupError(f"{cell_id}: not on the board")


# ------------------------------------------------------------------------------------------------- timers

def published_protocol_ms(call, device, trials: int = 30, warmup: int = 10) -> float:
    """The protocol kernelbench.com's harness states: warm-up calls, then per call a 128 MiB clear, a
    synchronise, and events around the call on the same tensors."""
    import torch

    clear = torch.empty(PUBLISHED_CLEAR_BYTES // 4, dtype=torch.float32, device=device)
    for _ in range(warmup):
        call()
    torch.cuda.synchronize(device)
    samples = []
    for _ in range(trials):
        clear.zero_()
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize(device)
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def loose_validate(expected: list):
    """A stale or wrong output is flagged (not judged: the grader judges)."""
    import torch

    def close(out, want) -> bool:
        if isinstance(want, (tuple, list)):
            return all(close(o, w) for o, w in zip(out, want))
        if not isinstance(want, torch.Tensor) or not want.is_floating_point():
            return True  # index outputs may differ on ties
        return bool(torch.allclose(out.float(), want.float(), atol=5e-2, rtol=5e-2))

    def validate(out, k: int) -> list[str]:
        return [] if k >= len(expected) or close(out, expected[k]) else [f"input set {k}: output off"]

    return validate


def time_shape(reference, candidate, shape: dict, index: int, device) -> dict:
    import torch
    from gpu_line_timers import do_bench_ms, graph_replay_ms, host_issue_ms

    from kernelbench.eval.portable.fresh import Reservoir
    from kernelbench.eval.portable.timing import time_function
    from kernelbench.eval.worker.context import build_model

    seed = 1000 + index
    sets = [list(reference.get_inputs(shape, seed + 17 * k, device)) for k in range(INPUT_SETS)]
    with torch.no_grad():
        ref_model = build_model(torch, device, reference, None, seed, shape)
        expected = [ref_model(*s) for s in sets]
        del ref_model
        model = build_model(torch, device, reference, candidate, seed, shape)
        row: dict = {"index": index, "shape": shape}
        timing = time_function(model, sets, device, warmup=10, trials=30, max_trials=200,
                               validate=loose_validate(expected), max_seconds=20.0,
                               fresh=Reservoir(0, lambda out: None), protocol="buffers", compare_trials=20)
        row["grader"] = {"median_ms": timing.median_ms, "method": timing.method, "notes": timing.notes,
                         "memo_probe": timing.memo_probe,
                         "protocols": {name: vars(p) for name, p in timing.protocols.items()}}
        for k, values in enumerate(sets):  # the memoisation probe left set 1's values in set 0
            values[:] = list(reference.get_inputs(shape, seed + 17 * k, device))
        one = lambda: model(*sets[0])
        turn = iter(range(1 << 62))
        rotating = lambda: model(*sets[next(turn) % len(sets)])
        row["do_bench_ms"] = do_bench_ms(one)
        row["do_bench_rotating_ms"] = do_bench_ms(rotating)
        row["published_protocol_ms"] = published_protocol_ms(one, device)
        row["host_issue_ms"] = host_issue_ms(one, device)
        row["graph_ms"] = graph_replay_ms(one, device)
    return row


def time_cell(cell_id: str, board: Path, solutions: Path, deck: Path, deadline: float) -> dict:
    import torch

    from kernelbench.problems.loader import bind_shape, load_solution

    problem, solution = locate(cell_id, board, solutions, deck)
    spec = problem.spec
    device = torch.device("cuda")
    result: dict = {"cell": cell_id, "problem": spec.id, "gpu": torch.cuda.get_device_name(device), "shapes": []}
    with tempfile.TemporaryDirectory(prefix="kb-cell-") as tmp:
        copy = Path(tmp) / "solution.py"
        shutil.copyfile(solution, copy)
        reference = problem.load_reference()
        candidate = load_solution(copy, "solution")
        for index, shape in enumerate(spec.shapes):
            if time.monotonic() > deadline:
                result["shapes"].append({"index": index, "skipped": "budget"})
                continue
            bind_shape(reference, shape)
            try:
                result["shapes"].append(time_shape(reference, candidate, shape, index, device))
            except Exception as exc:
                result["shapes"].append({"index": index, "error": f"{type(exc).__name__}: {exc}"[:600]})
                torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
    return result


# ------------------------------------------------------------------------------------------------- report

def ratios(row: dict) -> dict:
    grader = row.get("grader") or {}
    protocols = grader.get("protocols") or {}
    figures = {"score": grader.get("median_ms")}
    for name in ("buffers", "tensors", "same"):
        if name in protocols:
            figures[name] = protocols[name]["median_ms"]
    bench = row.get("do_bench_ms")
    return {f"{k}/do_bench": v / bench for k, v in figures.items() if v and bench}


def print_cell(result: dict) -> None:
    def us(value) -> str:
        return f"{value * 1e3:8.1f}" if isinstance(value, (int, float)) else f"{'-':>8}"

    for row in result["shapes"]:
        head = f"{result['cell'][:60]:60} shape {row['index']}"
        if "grader" not in row:
            print(f"{head}  {row.get('error') or row.get('skipped')}", flush=True)
            continue
        p = row["grader"]["protocols"]
        cols = "  ".join(f"{name} {us(p[name]['median_ms'])} (host {us(p[name]['host_median_ms'])}, "
                         f"host-bound {p[name]['host_bound_samples']}/{p[name]['samples']})"
                         for name in ("buffers", "tensors", "same") if name in p)
        print(f"{head}  score {us(row['grader']['median_ms'])} us [{row['grader']['method']}]  {cols}  "
              f"do_bench {us(row['do_bench_ms'])}  rotating {us(row['do_bench_rotating_ms'])}  "
              f"published protocol {us(row['published_protocol_ms'])}  graph {us(row['graph_ms'])}  "
              f"host issue {us(row['host_issue_ms'])}", flush=True)


AGREEMENT = (0.95, 1.05)


def explain(row: dict) -> str:
    """Why the grader's median and do_bench differ on a shape, from what was measured beside them."""
    ours, bench, graph = row["grader"]["median_ms"], row["do_bench_ms"], row.get("graph_ms")
    reading = _reading(ours, bench, graph, row)
    grader = row["grader"]
    if grader["method"] == "cuda_graph" or any("CUDA graph" in note for note in grader["notes"]):
        reading += " [the grader replayed, or tried to capture, a CUDA graph of the call: no longer done]"
    return reading


def _near(a: float, b: float, within: float = 0.10) -> bool:
    return abs(a / b - 1) <= within


def _reading(ours: float, bench: float, graph: float | None, row: dict) -> str:
    if AGREEMENT[0] <= ours / bench <= AGREEMENT[1]:
        return "agree"
    host = row["host_issue_ms"]
    if bench > ours and host > ours and (graph is None or _near(ours, graph)):
        return (f"host-bound: the host needs {host * 1e3:.0f} us to issue the call; do_bench counts what its L2 "
                "clear does not hide, the grader's device interval does not" +
                (f" (a graph replay: {graph * 1e3:.1f} us)" if graph else ""))
    if graph and _near(ours, graph, 0.05):
        return (f"a graph replay after a pause agrees ({graph * 1e3:.1f} us); back to back (do_bench) the GPU runs "
                "it at another clock")
    if abs(ours - bench) < 1.5e-3:
        return f"{(ours - bench) * 1e3:+.1f} us: within the events' resolution and the first launch's latency"
    same = row["grader"]["protocols"].get("same")
    if same and _near(same["median_ms"], bench):
        return (f"input protocol: on the same tensors and values every call it takes {same['median_ms'] * 1e3:.1f} us "
                "(do_bench re-passes one set); on new values in its buffers it does more work")
    return "unexplained"


def report_table(paths: list[Path]) -> str:
    """A markdown table of every shape timed in the given cell_timers.json files."""
    lines = ["| cell | shape | grader (score) | host per call | new tensors | same inputs | do_bench | do_bench "
             "rotating | published protocol | graph replay | grader / do_bench | reading |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    counts = {"shapes": 0, "agree": 0}

    def us(value) -> str:
        return f"{value * 1e3:.1f}" if isinstance(value, (int, float)) else "—"

    for path in paths:
        for cell in json.loads(Path(path).read_text())["cells"]:
            for row in cell.get("shapes", []):
                if "grader" not in row:
                    continue
                p = row["grader"]["protocols"]
                reading = explain(row)
                counts["shapes"] += 1
                counts["agree"] += reading.startswith("agree")
                lines.append(
                    f"| `{cell['cell'][:16]}…{cell['cell'][-28:]}` | {row['index']} | {us(row['grader']['median_ms'])} | "
                    f"{us(p['buffers']['host_median_ms'])} | {us(p.get('tensors', {}).get('median_ms'))} | "
                    f"{us(p.get('same', {}).get('median_ms'))} | {us(row['do_bench_ms'])} | "
                    f"{us(row['do_bench_rotating_ms'])} | {us(row['published_protocol_ms'])} | {us(row.get('graph_ms'))} | "
                    f"{row['grader']['median_ms'] / row['do_bench_ms']:.2f} | {reading} |")
    lines.append("")
    lines.append(f"{counts['agree']} of {counts['shapes']} shapes within {AGREEMENT[0]}-{AGREEMENT[1]} of do_bench; "
                 "every other one has its reading in the last column. Times in microseconds.")
    return "\n".join(lines)


def run_child(cell_id: str, args, seconds: float) -> dict:
    command = [sys.executable, __file__, "--child", cell_id, "--board", str(args.board), "--solutions",
               str(args.solutions), "--deck", str(args.deck), "--budget-s", str(seconds)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)
    except subprocess.TimeoutExpired:
        return {"cell": cell_id, "error": f"ran past {seconds + 60:.0f} s"}
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"cell": cell_id, "error": proc.stderr[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--board", type=Path, default=FOREIGN / "published-h100" / "leaderboard.json")
    parser.add_argument("--solutions", type=Path, default=FOREIGN / "public" / "runs" / "h100")
    parser.add_argument("--deck", type=Path, default=FOREIGN / "benchmarks" / "hard" / "problems-h100")
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, nargs="+", help="print a markdown table of cell_timers.json files")
    args = parser.parse_args()
    if args.report:
        print(report_table(args.report))
        return 0
    deadline = time.monotonic() + args.budget_s
    if args.child:
        try:
            result = time_cell(args.child, args.board, args.solutions, args.deck, deadline)
        except Exception:
            result = {"cell": args.child, "error": traceback.format_exc()[-2000:]}
        print(json.dumps(result, default=str))
        return 0
    cells = [line.strip() for line in args.cells.read_text().splitlines() if line.strip()]
    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cells": []}
    for cell_id in cells:
        left = deadline - time.monotonic()
        if left < 30:
            report["cells"].append({"cell": cell_id, "skipped": "budget"})
            continue
        result = run_child(cell_id, args, min(left - 10, 150.0))
        for row in result.get("shapes", []):
            row["ratios"] = ratios(row)
        report["cells"].append(result)
        if "error" in result:
            print(f"{cell_id}: {result['error'][-600:]}", flush=True)
        else:
            print_cell(result)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "cell_timers.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
