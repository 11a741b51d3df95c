"""What the grader's stage environment does to a library line's speed. Two parts:

1. the same line, shape and inputs timed by `triton.testing.do_bench` and by the grader's own protocol
   (`portable.timing.time_function` in the child: fresh inputs, flush, launch cover, host-bound rule), in child
   processes that differ in one thing each: the environment variable (default CUBLAS_WORKSPACE_CONFIG=:4096:8,
   which the stage processes set) and the introspection guard's audit hook (installed in the bench stage before
   the line is imported);
2. with --stages, the line measured through the real stages (`measure_baselines`), with and without that
   variable and with and without the bubblewrap sandbox.

    python benchmarks/gpu_stage_environment.py [--cases 01_fp8_gemm:sota:0,...] [--var NAME=VALUE] [--stages]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ("01_fp8_gemm:sota:0,01_fp8_gemm:sota:2,01_fp8_gemm:sota:3,08_gqa_prefill_attention:eager:2,"
                 "08_gqa_prefill_attention:sota:0,05_topk_bitonic:sota:0")


def arm_like_the_bench_stage(problem_dir: Path) -> None:
    """What the worker does before it imports a line: the namespace watch, the introspection guard, inductor's
    kernel naming (kernelbench.eval.worker.run_candidate_role)."""
    from kernelbench.eval.integrity.compiled import name_kernels_after_torch_calls
    from kernelbench.eval.worker import guard_introspection, watch_grader_namespaces

    watch_grader_namespaces()
    guard_introspection({"module": str(problem_dir / "sota.py")})
    name_kernels_after_torch_calls()


def child(case: str, guard: bool, arm: bool = False) -> dict:
    """Runs in a child process: one case timed both ways."""
    sys.path.insert(0, str(REPO))
    import torch
    from triton.testing import do_bench

    from benchmarks.gpu_line_timers import build_line, host_issue_ms, loaded_problem
    from kernelbench.eval.portable.fresh import Reservoir
    from kernelbench.eval.portable.timing import time_function

    name, line, index = case.split(":")
    problem = loaded_problem(REPO / "problems" / name)
    if guard:
        from kernelbench.eval.integrity.introspection import IntrospectionGuard

        IntrospectionGuard((str(problem.directory) + os.sep,)).install()
    if arm:
        arm_like_the_bench_stage(problem.directory)
    shape = problem.spec.shapes[int(index)]
    device = torch.device("cuda")
    model = build_line(problem, line, shape, problem.spec.seeds[0], device)
    sets = [problem.reference.get_inputs(shape, seed, device) for seed in problem.spec.seeds[:2]]
    with torch.no_grad():
        independent = do_bench(lambda: model(*sets[0]), warmup=50, rep=300, return_mode="median")
        timed = time_function(model, sets, device, warmup=10, trials=30, fresh=Reservoir(0, lambda out: None))
        host = host_issue_ms(lambda: model(*sets[0]), device)
    return {"host_issue_ms": host, "do_bench_ms": float(independent), "grader_ms": timed.median_ms,
            "host_bound_samples": timed.host_bound_samples, "samples": len(timed.samples_ms),
            "grader_p10_ms": statistics.quantiles(timed.samples_ms, n=10)[0]}


def run_child(case: str, env: dict[str, str], guard: bool = False, arm: bool = False) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", case] + ["--guard"] * guard + ["--arm"] * arm,
                          env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr[-600:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--var", default="CUBLAS_WORKSPACE_CONFIG=:4096:8")
    parser.add_argument("--child")
    parser.add_argument("--guard", action="store_true")
    parser.add_argument("--arm", action="store_true", help="arm the child as the bench stage arms itself")
    parser.add_argument("--variants", default="unset,set,unset+guard")
    parser.add_argument("--stages", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.guard, args.arm)))
        return 0
    name, value = args.var.split("=", 1)
    if args.stages:
        return stages(args.cases, name, value)
    unset = {k: v for k, v in os.environ.items() if k != name}
    for case in args.cases.split(","):
        settings = {"unset": (unset, False, False), "set": ({**unset, name: value}, False, False),
                    "unset+guard": (unset, True, False), "unset+armed": (unset, False, True)}
        rows = {label: run_child(case, *settings[label]) for label in args.variants.split(",")}
        for label, row in rows.items():
            if "error" in row:
                print(f"{case:36} {name} {label:5}: error {row['error']}")
                continue
            print(f"{case:36} {name} {label:5}: do_bench {row['do_bench_ms'] * 1e3:9.1f} us, grader protocol "
                  f"{row['grader_ms'] * 1e3:9.1f} us (p10 {row['grader_p10_ms'] * 1e3:9.1f}, host-bound "
                  f"{row['host_bound_samples']}/{row['samples']}), host issue {row['host_issue_ms'] * 1e3:7.1f} us",
                  flush=True)
        if {"set", "unset"} <= rows.keys() and all("error" not in r for r in rows.values()):
            print(f"{case:36} set/unset: do_bench {rows['set']['do_bench_ms'] / rows['unset']['do_bench_ms']:.3f}, "
                  f"grader protocol {rows['set']['grader_ms'] / rows['unset']['grader_ms']:.3f}", flush=True)
    return 0


def stages(cases: str, name: str, value: str) -> int:
    """Each problem's line through the real stages, under the four combinations."""
    sys.path.insert(0, str(REPO))
    from kernelbench.eval import process
    from kernelbench.eval.baselines import measure_baselines

    original = process.worker_env
    wanted = sorted({(c.split(":")[0], c.split(":")[1]) for c in cases.split(",")})
    for problem, line in wanted:
        for isolation in ("bwrap", "none"):
            for with_var in (True, False):
                os.environ["KERNELBENCH_ISOLATION"] = isolation

                def env(device: str, with_var: bool = with_var) -> dict[str, str]:
                    built = original(device)
                    return {**built, name: value} if with_var else {k: v for k, v in built.items() if k != name}

                process.worker_env = env
                measured = measure_baselines(REPO / "problems" / problem, lines=(line,)).lines[line]
                times = " ".join(f"{s.median_ms * 1e3:8.1f}" for s in measured.shapes) or measured.reason[:300]
                print(f"stages {problem} {line} isolation={isolation:5} {name}={'set' if with_var else 'unset'}: "
                      f"medians (us) {times}", flush=True)
    process.worker_env = original
    return 0


if __name__ == "__main__":
    sys.exit(main())
