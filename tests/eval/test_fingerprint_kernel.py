"""The Triton form of the output fingerprint's tree (portable/fingerprint_kernel.py) gives the torch form's roots,
run under Triton's interpreter on the CPU (the GPU's own build is checked by fresh.fingerprint at first use and by
benchmarks/pacing_overhead.py --device cuda). In a subprocess: the interpreter is chosen when the kernels are
defined."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="Triton is not installed")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import torch
from kernelbench.eval.portable import fingerprint_kernel as kernel
from kernelbench.eval.portable import fresh

def torch_root(words, offset, weight):
    return [int(x) for x in fresh._tree(*fresh._leaves(words, offset, weight))]

def kernel_root(words, offset, weight):
    return [int(x) for x in kernel.chunk_root(words, offset, weight)]

gen = torch.Generator().manual_seed(7)
checked = 0
# the real block: one program, several, a level that pads and one that stops early
for n in (1, 2, 3, 1023, 1024, 1025, 3077):
    for offset, weight in ((0, 1), (1 << 41, -(1 << 61) + 3)):
        words = torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen, dtype=torch.int64)
        assert kernel_root(words, offset, weight) == torch_root(words, offset, weight), (n, offset)
        checked += 1
# a block of 8 (three levels), so that many launches of the node kernel run on small sizes
kernel.BLOCK, kernel.LEVELS = 8, 3
for n in list(range(1, 70)) + [511, 512, 513, 4097]:
    words = torch.randint(-(1 << 62), 1 << 62, (n,), generator=gen, dtype=torch.int64)
    assert kernel_root(words, 5, 99) == torch_root(words, 5, 99), n
    checked += 1
print("checked", checked)
"""


def test_triton_tree_gives_the_torch_roots_under_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "checked 87" in proc.stdout


def test_the_kernel_shares_the_fingerprint_constants():
    from kernelbench.eval.portable import fresh

    kernel = pytest.importorskip("kernelbench.eval.portable.fingerprint_kernel")
    assert kernel.constants() == (fresh._MIX1, fresh._MIX2, fresh._LANE_A, fresh._LANE_C, fresh._NODE_A,
                                  fresh._NODE_C, fresh._PAD)


def test_cpu_outputs_keep_the_torch_form():
    import torch

    from kernelbench.eval.portable import fresh

    assert fresh._tree_kernel(torch.device("cpu")) is None
