"""The GPU-only red-team cases that compute another way under a profiler are what they say they are: their
profiled path, run here on the CPU with ncu's variable set, gives exactly the reference's answer (so on the GPU
only its time can give it away), or, for the case that lies there, a wrong one. Each runs in a process of its own:
importing a case installs its forgery of the stages' replies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GPU_CASES = REPO / "tests" / "redteam" / "gpu"

COMPARE = """
import importlib.util, os, sys, torch
os.environ["CUDA_INJECTION64_PATH"] = "libToolsInjection64.so"  # what ncu sets in the process it profiles
sys.path.insert(0, sys.argv[1])
case = __import__(sys.argv[2])
spec = importlib.util.spec_from_file_location("reference", sys.argv[3])
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)
gen = torch.Generator().manual_seed(5)
inputs = [torch.randn(4, 1000, generator=gen), torch.randint(0, 8, (4, 1000), generator=gen).float(),
          -torch.rand(3, 500, generator=gen)]  # ties in the third place and beyond, and all-negative rows
same = [all(torch.equal(a, b) for a, b in zip(case.Model(16)(x), reference.Model(16)(x))) for x in inputs]
print(" ".join(str(s) for s in same))
"""


@pytest.mark.parametrize(("case", "right"), [("ncu_slow_allowed", True), ("ncu_aware_library", False)])
def test_a_profiled_path_answers_as_its_case_says(case: str, right: bool):
    proc = subprocess.run([sys.executable, "-c", COMPARE, str(GPU_CASES), case,
                           str(REPO / "problems" / "05_topk_bitonic" / "reference.py")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(right)] * 3
