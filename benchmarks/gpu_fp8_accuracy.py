"""How far FP8 tensor-core GEMMs land from the exact result on 01_fp8_gemm's cases, against the tolerance.

Hopper's FP8 MMA keeps a reduced-precision accumulator; how often a kernel promotes it into fp32 decides its
error. This prints, per case and kernel, the number of outputs beyond atol + rtol·|expected|, the worst ratio
|diff| / allowed, the worst error against the fp64 result as a share of its output row's rms magnitude (where
outputs cancel, elementwise tolerances ask the impossible) and counts beyond allowed + r·row rms, for: the
honest Triton solution (promotion every 128 of K), the same kernel promoting every 32, and cuBLAS through
torch._scaled_mm with and without fast accumulation. It tells a tolerance that a correct library kernel cannot
meet from a kernel that accumulates too coarsely.

    python benchmarks/gpu_fp8_accuracy.py [--shape 3] [--cases base,heavy_tailed,skewed_scales]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
ROW_RTOLS = (5e-4, 1e-3, 2e-3, 4e-3, 8e-3)  # candidate bounds: a share of the output row's rms magnitude
PROBLEM = REPO / "problems" / "01_fp8_gemm"
sys.path.insert(0, str(REPO))

from kernelbench.problems.loader import load_module as load  # noqa: E402  (after the path)


def triton_kernel(solution, imprecise: int):
    def run(x, x_scale, weight, weight_scale):
        M, K = x.shape
        N = weight.shape[0]
        y = torch.empty(M, N, dtype=torch.bfloat16, device=x.device)
        grid = (solution.triton.cdiv(M, 128), solution.triton.cdiv(N, 128))
        kernel = solution._fp8_gemm_kernel if imprecise == 128 else _variant(solution, imprecise)
        kernel[grid](x, weight, x_scale, weight_scale, y, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128,
                     num_warps=8, num_stages=3)
        return y
    return run


def _variant(solution, imprecise: int):
    """The solution's kernel with a different promotion interval (its source, one argument changed)."""
    import inspect
    import tempfile

    source = inspect.getsource(solution).replace("max_num_imprecise_acc=BLOCK_K", f"max_num_imprecise_acc={imprecise}")
    path = Path(tempfile.mkdtemp()) / f"fp8_variant_{imprecise}.py"
    path.write_text(source)
    return load(path, path.stem)._fp8_gemm_kernel


def scaled_mm(fast: bool):
    def run(x, x_scale, weight, weight_scale):
        return torch._scaled_mm(x, weight.t(), scale_a=x_scale.float(), scale_b=weight_scale[None, :].float(),
                                out_dtype=torch.bfloat16, use_fast_accum=fast)
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", type=int, action="append", help="shape index (repeatable; default 0 and 3)")
    parser.add_argument("--cases", default="base,heavy_tailed,skewed_scales")
    args = parser.parse_args()
    from kernelbench.problems.loader import load_problem_spec

    spec = load_problem_spec(PROBLEM)
    tol = spec.tolerance["bfloat16"]
    reference = load(PROBLEM / "reference.py", "reference")
    solution = load(REPO / "solutions" / "triton" / "01_fp8_gemm.py", "solution")
    kernels = {"triton promote/128": triton_kernel(solution, 128), "triton promote/32": triton_kernel(solution, 32),
               "_scaled_mm": scaled_mm(False), "_scaled_mm fast_accum": scaled_mm(True)}
    for index in args.shape or [0, 3]:
        shape = spec.shapes[index]
        torch.manual_seed(index)
        model = reference.Model(**reference.get_init_kwargs(shape)).cuda()
        for case in args.cases.split(","):
            x, x_scale = reference.get_inputs(shape, 42, "cuda", case=case)
            exact = reference.oracle(model, x, x_scale)
            expected = model(x, x_scale).double()
            allowed = tol.atol + tol.rtol * expected.abs()
            row_rms = exact.square().mean(dim=-1, keepdim=True).sqrt()
            ref_ratio = float(((expected - exact).abs() / allowed).max())
            print(f"shape {index} {shape} case {case}: fp32 reference vs fp64 worst |diff|/allowed {ref_ratio:.3f}")
            for name, run in kernels.items():
                try:
                    y = run(x, x_scale, model.weight, model.weight_scale).double()
                except Exception as exc:
                    print(f"  {name:24} failed: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                ratio = (y - expected).abs() / allowed
                rel = float((y - exact).norm() / exact.norm())
                row_rel = float(((y - exact).abs() / row_rms).max())
                beyond = {r: int(((y - expected).abs() > allowed + r * row_rms).sum()) for r in ROW_RTOLS}
                print(f"  {name:24} beyond tolerance {int((ratio > 1).sum()):>8} of {ratio.numel()}, worst "
                      f"|diff|/allowed {float(ratio.max()):8.3f}, rel. rms vs fp64 {rel:.2e}, worst |diff vs fp64|"
                      f"/row rms {row_rel:.2e}; beyond allowed + r*row rms: "
                      + ", ".join(f"r={r:g}: {n}" for r, n in beyond.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
