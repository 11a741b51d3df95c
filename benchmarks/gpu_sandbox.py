"""The confinement on a GPU machine: what a sandboxed candidate process can still do there (the CUDA driver,
Triton's JIT, nvcc through load_inline, CUDA graphs, pinned memory, CUPTI, ncu) and what it cannot (the red-team
catalogue), with the machine's facts. Writes `gpu_sandbox.json` and a Markdown summary under --out.

    bash -c 'source benchmarks/device_env.sh && python3 benchmarks/gpu_sandbox.py --out $OUT'
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench import confinement  # noqa: E402  (after the path)
from kernelbench.eval.isolation import isolation_for, sandboxed  # noqa: E402
from kernelbench.eval.process import worker_env  # noqa: E402

# each workload prints one JSON line {"name", "ok", "seconds", "detail"}
WORKLOADS = r'''
import json, os, sys, time, traceback
def step(name, fn):
    t = time.perf_counter()
    try:
        detail = fn()
        ok = True
    except BaseException as exc:
        detail, ok = traceback.format_exc()[-600:], False
    print(json.dumps({"name": name, "ok": ok, "seconds": round(time.perf_counter() - t, 3), "detail": str(detail)[:600]}), flush=True)

def confined():
    import kernelbench.confinement as c
    held = c.privileges_held()
    assert not held, held
    return f"uid {os.getuid()}"

def matmul():
    import torch
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    return torch.cuda.get_device_name()

def triton_jit():
    import torch, triton, triton.language as tl
    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    add[(1024,)](x, x, out, x.numel(), BLOCK=1024)
    assert torch.allclose(out, 2 * x)
    return triton.__version__

def load_inline():
    import torch
    from torch.utils.cpp_extension import load_inline
    src = "__global__ void twice(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n" \
          "void run(torch::Tensor x) { twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel()); }\n"
    mod = load_inline("kb_sandbox_twice", cpp_sources="void run(torch::Tensor x);", cuda_sources=src,
                      functions=["run"], extra_cuda_cflags=["-arch=sm_90"])
    x = torch.ones(1000, device="cuda")
    mod.run(x)
    assert x.sum().item() == 2000
    return "built with nvcc and ninja"

def cuda_graph():
    import torch
    x = torch.randn(1 << 20, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = x * 2
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            y = x * 2
    g.replay()
    torch.cuda.synchronize()
    return "captured and replayed"

def pinned_memory():
    import torch
    t = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True)
    t.fill_(1)
    return f"{t.numel() >> 20} MiB pinned"

def cupti_recorder():
    import torch
    from kernelbench.eval.integrity.cupti_kernels import kernel_recorder
    with kernel_recorder().recording() as names:
        a = torch.randn(1024, 1024, device="cuda")
        (a @ a).sum().item()
        torch.cuda.synchronize()
    return sorted(names)[:3]

for name, fn in [("confined", confined), ("matmul", matmul), ("triton_jit", triton_jit), ("load_inline", load_inline),
                 ("cuda_graph", cuda_graph), ("pinned_memory", pinned_memory), ("cupti_recorder", cupti_recorder)]:
    step(name, fn)
'''

NCU_TARGET = "import torch; a = torch.randn(2048, 2048, device='cuda'); (a @ a).sum().item()"


def facts() -> dict:
    def out(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()[:400]
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"({exc})"
    params = Path("/proc/driver/nvidia/params")
    profiling = [line for line in params.read_text().splitlines() if "Profiling" in line] if params.exists() else []
    return {"uid": os.geteuid(), "kernel": platform.release(), "gpus": out(["nvidia-smi", "-L"]),
            "bwrap": out(["bwrap", "--version"]), "setpriv": out(["setpriv", "--version"]),
            "profiling": profiling, "python": sys.version.split()[0]}


def run_confined(argv: list[str], device: str, workdir: Path, timeout: float) -> subprocess.CompletedProcess:
    isolation = isolation_for(device)
    if not isolation.sandboxed:
        raise SystemExit(f"no sandbox here: {isolation.note}")
    command = sandboxed(argv, isolation.bwrap, workdir=workdir, device=device, env=worker_env(device),
                        writable=(workdir / "out",))
    try:
        return subprocess.run(command.argv, env=command.env, pass_fds=command.pass_fds, capture_output=True,
                              text=True, timeout=timeout, cwd=workdir, preexec_fn=confinement.apply_limits)
    finally:
        command.close()


def workloads(device: str) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="kb-gpu-sandbox-", dir="/dev/shm") as tmp:
        script = Path(tmp) / "workloads.py"  # Triton reads a kernel's source from its file
        script.write_text(WORKLOADS)
        script.chmod(0o644)
        proc = run_confined([sys.executable, "-P", str(script)], device, Path(tmp), 600)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not rows:
        rows = [{"name": "workloads", "ok": False, "seconds": 0, "detail": (proc.stderr or proc.stdout)[-800:]}]
    return rows


def ncu_inside(device: str) -> dict:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    with tempfile.TemporaryDirectory(prefix="kb-gpu-ncu-", dir="/dev/shm") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        argv = [ncu, "--metrics", "dram__bytes_read.sum", "--csv", "--page", "raw", "--log-file",
                str(out / "ncu.log"), sys.executable, "-P", "-c", NCU_TARGET]
        started = time.monotonic()
        proc = run_confined(argv, device, Path(tmp), 300)
        log = (out / "ncu.log").read_text(errors="replace") if (out / "ncu.log").exists() else ""
    kernels = [line for line in proc.stdout.splitlines() if line.startswith('"') and "dram__bytes" not in line]
    return {"returncode": proc.returncode, "seconds": round(time.monotonic() - started, 1),
            "rows": len(kernels), "log_tail": log[-600:], "stderr_tail": proc.stderr[-600:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict = {"facts": facts()}
    started = time.monotonic()
    result["isolation"] = isolation_for(args.device).note
    result["isolation_probe_s"] = round(time.monotonic() - started, 2)
    print("facts", json.dumps(result, indent=1), flush=True)
    if result["isolation"] != "bwrap":
        (args.out / "gpu_sandbox.json").write_text(json.dumps(result, indent=1))
        return 1
    result["workloads"] = workloads(args.device)
    for row in result["workloads"]:
        print(f"{row['name']:16s} {'ok' if row['ok'] else 'FAILED':6s} {row['seconds']:8.2f} s  {row['detail'][:300]}",
              flush=True)
    if args.device == "cuda":
        result["ncu_inside"] = ncu_inside(args.device)
        print("ncu inside the sandbox:", json.dumps(result["ncu_inside"], indent=1), flush=True)
    (args.out / "gpu_sandbox.json").write_text(json.dumps(result, indent=1))
    return 0 if all(row["ok"] for row in result["workloads"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
