"""torch.compile's generated kernels, by name: the kernel names found in inductor's output modules, and the
worker's setting that names them after the traced graph's torch calls (run in a fresh interpreter: it adds an
import hook)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelbench.eval.integrity.compiled import compiled_kernel_names

REPO = Path(__file__).resolve().parents[2]


def test_kernel_names_are_read_from_inductor_output_modules(tmp_path):
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "cab.py").write_text(textwrap.dedent("""
        cpp_fused_rms_norm_0 = async_compile.cpp_pybinding(['const float*'], r'''...''')
        triton_per_fused__softmax_1 = async_compile.triton('triton_per_fused__softmax_1', '''
        def triton_per_fused__softmax_1(in_ptr0, out_ptr0):
            pass
        ''')
        my_helper_fused_softmax = 1
        """))
    assert compiled_kernel_names(tmp_path) == ["cpp_fused_rms_norm_0", "triton_per_fused__softmax_1"]
    assert compiled_kernel_names(tmp_path / "missing") == [] and compiled_kernel_names(None) == []


@pytest.mark.slow
def test_compiled_kernels_are_named_after_the_torch_calls(tmp_path):
    code = textwrap.dedent("""
        import torch
        from kernelbench.eval.integrity.compiled import name_kernels_after_torch_calls
        name_kernels_after_torch_calls()
        import torch.nn.functional as F
        norm = torch.compile(lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6))
        norm(torch.randn(4, 64), torch.randn(64))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = compiled_kernel_names(tmp_path)
    assert any("rms_norm" in name for name in names), names
