"""Run under ncu by `counters.measure_dram_bytes`: one candidate call after an L2 flush, inside an NVTX range.

    python -m kernelbench.eval.integrity.counter_probe SOLUTION PROBLEM_DIR SHAPE_INDEX SEED
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch

    from kernelbench.eval.integrity.counters import NVTX_RANGE
    from kernelbench.problems.loader import load_module, load_solution
    from kernelbench.problems.spec import load_problem_spec

    solution, problem_dir, index, seed = Path(argv[0]), Path(argv[1]), int(argv[2]), int(argv[3])
    shape = load_problem_spec(problem_dir).shapes[index]
    reference = load_module(problem_dir / "reference.py", "reference")
    candidate = load_solution(solution)
    kwargs = reference.get_init_kwargs(shape)
    torch.manual_seed(0)
    ref = reference.Model(**kwargs)
    torch.manual_seed(0)
    model = candidate.Model(**kwargs)
    model.load_state_dict(ref.state_dict(), strict=True)
    model = model.cuda().eval()
    warm = reference.get_inputs(shape, seed + 1, "cuda")
    inputs = reference.get_inputs(shape, seed, "cuda")
    print(f"KB_PROBE_INPUT_BYTES={sum(x.numel() * x.element_size() for x in inputs if torch.is_tensor(x))}")
    flush = torch.empty(int(torch.cuda.get_device_properties(0).L2_cache_size * 4), dtype=torch.uint8,
                        device="cuda")
    with torch.no_grad():
        model(*warm)  # compile and autotune outside the measured range
        flush.fill_(1)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
