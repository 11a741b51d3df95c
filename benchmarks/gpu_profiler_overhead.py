"""What a launch record left on while timing would cost: each honest solution's median under the grader's timing
protocol with no recorder, with torch's profiler recording CUDA activity only, and with CPU and CUDA activity (the
checked calls' launch audit), measured in one process, one after the other, on the same inputs.

    python3 benchmarks/gpu_profiler_overhead.py --out $OUT [--solutions triton eager] [--problems 03 04 07]

The question it answers: can the timed calls run under the same recorder as the checked ones (so no state of the
process tells a timed call from an audited one) without moving the published medians? It also prints whether the
profiler's CUPTI library is mapped into the process before any recording (what a candidate could look for).
Writes profiler_overhead.json and prints a table; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODES = ("none", "cuda", "cpu+cuda")


def cupti_mapped() -> bool:
    try:
        return "cupti" in Path("/proc/self/maps").read_text().lower()
    except OSError:
        return False


def build(reference, solution: Path, shape: dict, device):
    import torch

    from kernelbench.problems.loader import load_solution

    kwargs = reference.get_init_kwargs(shape)
    torch.manual_seed(0)
    ref_model = reference.Model(**kwargs)
    torch.manual_seed(0)
    model = load_solution(solution).Model(**kwargs)
    model.load_state_dict(ref_model.state_dict(), strict=True)
    return model.to(device).eval()


def time_mode(model, sets, device, mode: str, spec: dict) -> dict:
    import contextlib

    import torch
    from torch.profiler import ProfilerActivity, profile

    from kernelbench.eval.portable.timing import time_function

    gpu = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]  # cpu: a dry run
    activities = {"cuda": gpu, "cpu+cuda": list(dict.fromkeys([ProfilerActivity.CPU, *gpu]))}
    recorder = profile(activities=activities[mode]) if mode != "none" else contextlib.nullcontext()
    with torch.no_grad(), recorder as prof:
        timing = time_function(model, sets, device, warmup=spec["warmup"], trials=spec["trials"],
                               max_trials=spec["trials"], graph_below_ms=spec["cuda_graph_below_ms"],
                               max_seconds=spec["shape_seconds"])
    kernels = 0
    if prof is not None:
        kernels = len({e.name for e in prof.events()
                       if str(getattr(e, "device_type", "")).lower().endswith("cuda")})
    return {"median_ms": timing.median_ms, "samples": len(timing.samples_ms), "method": timing.method,
            "host_bound": timing.host_bound_samples, "kernel_names": kernels}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--solutions", nargs="+", default=["triton", "eager"])
    parser.add_argument("--problems", nargs="+", default=["03", "04", "07", "09"])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--max-shapes", type=int, default=3, help="the first N shapes of each problem")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script on smoke shapes")
    args = parser.parse_args()

    import torch

    from kernelbench.problems.loader import load_module
    from kernelbench.problems.loader import load_problem_spec

    device = torch.device(args.device)
    print(f"CUPTI mapped before any recording: {cupti_mapped()}", flush=True)
    rows = []
    for prefix in args.problems:
        problem_dir = next(p for p in sorted((ROOT / "problems").iterdir()) if p.name.startswith(prefix))
        spec = load_problem_spec(problem_dir)
        timing = {**spec.timing.model_dump(), "trials": args.trials, "warmup": 5}
        reference = load_module(problem_dir / "reference.py", "reference")
        shapes = spec.shapes if device.type == "cuda" else (spec.smoke_shapes or spec.shapes[:1])
        for index, shape in enumerate(shapes[:args.max_shapes]):
            sets = [reference.get_inputs(shape, seed, device) for seed in (1, 2)]  # drawn once for every line
            for line in args.solutions:
                model = build(reference, ROOT / "solutions" / line / f"{problem_dir.name}.py", shape, device)
                row = {"problem": problem_dir.name, "solution": line, "shape": index}
                for mode in MODES:
                    row[mode] = time_mode(model, sets, device, mode, timing)
                base = row["none"]["median_ms"]
                row["ratio_cuda"] = row["cuda"]["median_ms"] / base
                row["ratio_cpu_cuda"] = row["cpu+cuda"]["median_ms"] / base
                rows.append(row)
                print(f"{problem_dir.name} {line} shape {index}: none {base:.4g} ms ({row['none']['method']}), "
                      f"cuda-only x{row['ratio_cuda']:.3f}, cpu+cuda x{row['ratio_cpu_cuda']:.3f} "
                      f"(kernel names {row['cuda']['kernel_names']})", flush=True)
                del model
            del sets
            torch.cuda.empty_cache()
    print(f"CUPTI mapped after recording: {cupti_mapped()}")
    ratios = [r["ratio_cuda"] for r in rows]
    if ratios:
        print(f"cuda-only recorder: median ratio {statistics.median(ratios):.3f}, max {max(ratios):.3f} "
              f"over {len(rows)} shapes")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profiler_overhead.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
