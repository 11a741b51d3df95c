"""The deck's held-out cases at full shapes on a GPU: every problem's reference runs on each held-out case
(its shapes with the base draw and every stress entry, its property draws) and the honest Triton solution
matches it, judged as a grading judges it (the grader's Comparer, through tests/problems/test_deck.py:mismatches).

Run from the repository root on the GPU machine:
    python benchmarks/gpu_heldout_validate.py --out $OUT
Dry run on the CPU (smoke shapes, Triton interpreted):
    TRITON_INTERPRET=1 python benchmarks/gpu_heldout_validate.py --device cpu --out /tmp/heldout
One JSON line per case in OUT/heldout_gpu.jsonl (kept if the run is cut short) and a line printed per case;
the summary counts cases right, wrong and failed to run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SECRET = 27  # any: a fixed secret makes the run repeatable


def run_case(pid: str, case, reference, solution, generators, device: str, spec) -> dict:
    from tests.problems.test_deck import mismatches

    if case.generator:
        inputs = generators[case.generator](reference, dict(case.shape), case.seed, "cpu")
    else:
        inputs = reference.get_inputs(case.shape, case.seed, "cpu", case.case, case.scale)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    torch.manual_seed(0)
    ref_model = reference.Model(**reference.get_init_kwargs(case.shape)).to(device)
    candidate = solution.Model(**reference.get_init_kwargs(case.shape))
    candidate.load_state_dict(ref_model.state_dict(), strict=True)
    candidate = candidate.to(device)
    with torch.no_grad():
        started = time.perf_counter()
        want = ref_model(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        ref_s = time.perf_counter() - started
        got = candidate(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
    problems = mismatches(reference, spec, got, want, inputs)
    return {"problem": pid, "case": case.label, "shape": case.shape, "seed": case.seed, "ok": not problems,
            "reference_s": round(ref_s, 3), "problems": [p[:300] for p in problems]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--problem", action="append", default=[], help="only these problem ids (repeatable)")
    args = parser.parse_args()
    from kernelbench.eval.cases import heldout_cases
    from kernelbench.problems.heldout import load_generators
    from kernelbench.problems.loader import load_heldout, load_problem_spec
    from kernelbench.problems.modules import load_module

    mode = "full" if args.device == "cuda" else "smoke"
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "heldout_gpu.jsonl"
    log.write_text("")
    counts = {"right": 0, "wrong": 0, "error": 0}
    for problem in sorted((REPO / "problems").glob("[0-9][0-9]_*")):
        if args.problem and problem.name not in args.problem or not (problem / "heldout.yaml").is_file():
            continue
        spec, heldout = load_problem_spec(problem), load_heldout(problem)
        reference = load_module(problem / "reference.py", "reference")
        solution = load_module(REPO / "solutions" / "triton" / f"{problem.name}.py", "triton_solution")
        generators = load_generators(problem)
        for case in heldout_cases(spec, heldout, mode, SECRET, len(spec.shapes)):
            started = time.perf_counter()
            try:
                record = run_case(problem.name, case, reference, solution, generators, args.device, spec)
                counts["right" if record["ok"] else "wrong"] += 1
            except Exception as exc:  # a case that could not run is reported, and the others go on
                record = {"problem": problem.name, "case": case.label, "shape": case.shape, "seed": case.seed,
                          "ok": None, "error": f"{type(exc).__name__}: {exc}"[:500],
                          "trace": traceback.format_exc()[-1500:]}
                counts["error"] += 1
            record["wall_s"] = round(time.perf_counter() - started, 2)
            with log.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
            print(json.dumps({k: v for k, v in record.items() if k != "trace"}), flush=True)
            if args.device == "cuda":
                torch.cuda.empty_cache()
    print(f"held-out cases on {args.device} ({mode} shapes): {counts}")
    return 0 if counts["wrong"] == counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
