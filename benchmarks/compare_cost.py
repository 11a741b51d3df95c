"""What the output comparison costs on the grader's CPU: seconds and peak memory for one output of a given size.

    python benchmarks/compare_cost.py [--elements 234881024] [--dtype bfloat16] [--repeats 3]

Each measurement runs in a fresh process (its peak RSS is the comparison's alone, beside the two tensors). The
default size is 06_sonic_moe_swiglu's largest output (its Mixtral shape), which the judge compares once per check.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

ONE = """
import json, resource, sys, time
import torch
from kernelbench.eval.portable.compare import compare_outputs
elements, dtype, wrong = int(sys.argv[1]), getattr(torch, sys.argv[2]), sys.argv[3] == "wrong"
width = 4096
expected = torch.randn(elements // width, width, generator=torch.Generator().manual_seed(0), dtype=dtype)
out = expected.clone()
if wrong:
    out[len(out) // 2, 7] += 1
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.perf_counter()
result = compare_outputs(out, expected, {sys.argv[2]: {"atol": 0.02, "rtol": 0.02}})
seconds = time.perf_counter() - began
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "extra_peak_mib": (peak - before) / 1024, "ok": result.ok,
                  "threads": torch.get_num_threads()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=234_881_024)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for case in ("right", "wrong"):
        for _ in range(args.repeats):
            line = subprocess.run([sys.executable, "-c", ONE, str(args.elements), args.dtype, case], check=True,
                                  capture_output=True, text=True).stdout
            figures = json.loads(line)
            print(f"{args.elements:,} {args.dtype} elements, {case} output: {figures['seconds']:.2f} s, "
                  f"{figures['extra_peak_mib']:,.0f} MiB above the two tensors, ok={figures['ok']}, "
                  f"{figures['threads']} threads", flush=True)


if __name__ == "__main__":
    main()
