"""Validate the deck on a GPU: every reference runs at full shapes, every Triton solution compiles and matches it,
every SOTA line runs, and 01's Triton kernel carries FP8 tensor-core instructions in its SASS.

Run from the repository root on the GPU machine:
    python tests/problems/gpu_validate.py --out $OUT
Dry run on the CPU (smoke shapes, Triton interpreted):
    TRITON_INTERPRET=1 python tests/problems/gpu_validate.py --device cpu --out /tmp/deck
Writes one JSON line per measurement to OUT/deck_gpu.jsonl (kept even if the run is cut short) and prints a
summary line per item. Not a pytest test: it needs a GPU and minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
_names = itertools.count()


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_gpu_validate_{next(_names)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Log:
    def __init__(self, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "deck_gpu.jsonl"
        self.path.write_text("")

    def __call__(self, **record) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps(record, default=str) + "\n")
        print(" ".join(f"{k}={v}" for k, v in record.items()), flush=True)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, device: str):
    """(output, wall milliseconds) of one synchronised call (a first call includes compilation)."""
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return out, (time.perf_counter() - start) * 1e3


def bench_ms(fn, device: str, first_ms: float) -> float | None:
    """Triton's do_bench (L2 cleared before each call, median); skipped for calls too slow to repeat."""
    if device != "cuda" or first_ms > 300:
        return None
    from triton.testing import do_bench
    return round(do_bench(fn, warmup=5, rep=30), 4)


def mismatch(reference, tolerances, got, want, inputs) -> list[str]:
    from kernelbench.eval.portable.compare import compare_outputs
    result = compare_outputs(got, want, tolerances)
    messages = list(result.messages)
    hook = getattr(reference, "compare", None)
    if not messages and hook is not None:
        messages = list(hook(got, want, inputs, tolerances) or [])
    return messages


def build(module, reference, shape, device, state=None):
    torch.manual_seed(0)
    model = module.Model(**reference.get_init_kwargs(shape))
    if state is not None:
        model.load_state_dict(state, strict=True)
    return model.to(device).eval()


def check_candidate(log, pid, label, path, reference, tolerances, shape, i, inputs, expected, ref_state, device,
                    time_it: bool) -> None:
    try:
        model = build(load(path), reference, shape, device, ref_state)
        with torch.no_grad():
            got, first_ms = timed(lambda: model(*[t.clone() if torch.is_tensor(t) else t for t in inputs]), device)
            problems = mismatch(reference, tolerances, got, expected, inputs)
            if time_it and not problems:
                _, again_ms = timed(lambda: model(*inputs), device)
                ms = bench_ms(lambda: model(*inputs), device, again_ms)
            else:
                ms = None
        log(problem=pid, what=label, shape=i, ok=not problems, ms=ms, first_call_ms=round(first_ms, 3),
            reason=problems[0][:300] if problems else "")
    except Exception as exc:  # one failing line must not stop the rest
        log(problem=pid, what=label, shape=i, ok=False, reason=f"{type(exc).__name__}: {exc}"[:500],
            trace=traceback.format_exc()[-1500:])


def fp8_sass(log, out: Path) -> None:
    """Compile 01's Triton kernel and a bf16-upcast twin; count FP8 and bf16 tensor-core instructions in each."""
    sol = load(REPO / "solutions/triton/01_fp8_gemm.py")
    M = N = K = 512
    x = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    xs, ws = torch.ones(M, 1, device="cuda"), torch.ones(N, device="cuda")
    y = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    compiled = sol._fp8_gemm_kernel[(4, 4)](x, w, xs, ws, y, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128,
                                            num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    for label, kernel in (("triton_fp8", compiled), ("bf16_upcast_twin", _bf16_twin(x, w, xs, ws, y))):
        cubin = out / f"{label}.cubin"
        cubin.write_bytes(kernel.asm["cubin"])
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True).stdout
        (out / f"{label}.sass.txt").write_text(sass)
        counts = {op: len(re.findall(rf"\b{op}\b", sass)) for op in ("QGMMA", "HGMMA", "QMMA", "HMMA")}
        sample = next((line.strip() for line in sass.splitlines() if "GMMA" in line), "")
        log(problem="01_fp8_gemm", what=f"sass:{label}", counts=counts, sample=sample[:160],
            fp8_tensor_cores=counts["QGMMA"] + counts["QMMA"] > 0)


def _bf16_twin(x, w, xs, ws, y):
    """What the published leaky solutions did, in Triton: upcast e4m3 to bf16 before the dot."""
    import triton
    import triton.language as tl

    @triton.jit
    def upcast_gemm(x_ptr, w_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(x_ptr + rm[:, None] * K + k0 + rk[None, :]).to(tl.bfloat16)
            b = tl.load(w_ptr + rn[:, None] * K + k0 + rk[None, :]).to(tl.bfloat16)
            acc = tl.dot(a, tl.trans(b), acc)
        tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    kernel = upcast_gemm[(4, 4)](x, w, y, 512, 512, 512, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    return kernel


def _size(shape: dict) -> float:
    size = 1.0
    for value in shape.values():
        size *= float(value)
    return size


def validate_problem(log, pid: str, device: str, smoke: bool, time_it: bool) -> None:
    import yaml

    folder = REPO / "problems" / pid
    spec = yaml.safe_load((folder / "problem.yaml").read_text())
    tolerances = {k: {"atol": float(v["atol"]), "rtol": float(v["rtol"])} for k, v in spec["tolerance"].items()}
    reference = load(folder / "reference.py")
    shapes = spec["smoke_shapes"] if smoke else spec["shapes"]
    sota = folder / "sota.py"
    # stress cases run on the smallest shape: the point is their inputs, not their size
    smallest = min(range(len(shapes)), key=lambda j: _size(shapes[j]))
    for i, shape in enumerate(shapes):
        ref_model = build(reference, reference, shape, device)
        state = ref_model.state_dict()
        cases = [("base", 1.0)]
        if i == smallest:
            cases += [(s.get("distribution", "normal"), float(s.get("scale", 1.0))) for s in spec.get("stress", [])]
        for case, scale in cases:
            case = "base" if case == "normal" else case
            tag = "" if (case, scale) == ("base", 1.0) else f":{case}@{scale:g}"
            try:
                inputs = reference.get_inputs(shape, 42, device, case, scale)
                with torch.no_grad():
                    expected, ref_ms = timed(lambda: ref_model(*inputs), device)
                log(problem=pid, what="reference" + tag, shape=i, ok=True, first_call_ms=round(ref_ms, 1))
            except Exception as exc:
                log(problem=pid, what="reference" + tag, shape=i, ok=False, reason=f"{type(exc).__name__}: {exc}"[:500])
                continue
            base = not tag
            check_candidate(log, pid, "triton" + tag, REPO / "solutions/triton" / f"{pid}.py", reference, tolerances,
                            shape, i, inputs, expected, state, device, time_it and base)
            if sota.is_file() and (base or pid == "04_kahan_softmax"):
                check_candidate(log, pid, "sota" + tag, sota, reference, tolerances, shape, i, inputs, expected,
                                state, device, time_it and base)
            if base and time_it:
                log(problem=pid, what="reference_bench", shape=i,
                    ms=bench_ms(lambda: ref_model(*inputs), device, ref_ms))
            del inputs, expected
        del ref_model, state
        if device == "cuda":
            torch.cuda.empty_cache()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--no-time", action="store_true")
    args = parser.parse_args()
    log = Log(args.out)
    smoke = args.device == "cpu"
    if args.device == "cuda":
        log(what="device", name=torch.cuda.get_device_name(), torch=torch.__version__,
            triton=__import__("triton").__version__)
        try:
            fp8_sass(log, args.out)
        except Exception as exc:
            log(problem="01_fp8_gemm", what="sass", ok=False, reason=f"{type(exc).__name__}: {exc}"[:500])
    pids = args.problems or sorted(p.name for p in (REPO / "problems").glob("[0-9][0-9]_*"))
    for pid in pids:
        start = time.perf_counter()
        validate_problem(log, pid, args.device, smoke, not args.no_time)
        log(problem=pid, what="done", seconds=round(time.perf_counter() - start, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
