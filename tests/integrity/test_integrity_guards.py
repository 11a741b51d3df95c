"""Unit tests of the guards that need no grader: launch audit, SASS parsing and the FP8 verdict, the Kahan
row-sum evidence, template hashing (the counter check: test_counters.py)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelbench.eval.integrity.hooks import module_constant, required_mnemonics
from kernelbench.eval.integrity.launches import launch_audit
from kernelbench.eval.integrity.numerics import kahan_check
from kernelbench.eval.integrity.sass import base_identifier, fp8_sass_check, split_functions
from kernelbench.eval.integrity.templates import Snapshot, grading_template_findings

GEMM = SimpleNamespace(forbidden=["torch.mm"], forbidden_kernels=["nvjet"])
SOFTMAX = SimpleNamespace(forbidden=["torch.softmax"], forbidden_kernels=["cunn_SoftMax"])
KAHAN = SimpleNamespace(forbidden=["torch.softmax"], forbidden_kernels=[], leak_checks=["kahan_row_sum"])

# kernel names the H100's profiler reported for library routes to a row sum (benchmarks/gpu_kahan_row_sums.py)
_REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{acc}, at::native::{op}, unsigned int, {acc}, 4, 4> >"
H100_SUMS = {
    "sum": _REDUCE.format(acc="float", op="func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
                          "(at::TensorIterator&)::{lambda(float, float)#1}>"),
    "mean": _REDUCE.format(acc="float", op="MeanOps<float, float, float, float>"),
    "nansum": _REDUCE.format(acc="float", op="NanSumOps<float, float>"),
    "norm1": _REDUCE.format(acc="float", op="NormOneOps<float, float, float>"),
    "cumsum": "void at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float> >(float*, float const*, "
              "unsigned int, unsigned int, unsigned int, float, std::plus<float>)",
    "gemv": "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, "
            "true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>>>",
    "splitk": "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, "
              "true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*)",
}
H100_ALLOWED = [
    _REDUCE.format(acc="double", op="func_wrapper_t<double, at::native::sum_functor<double, double, double>::operator()"
                   "(at::TensorIterator&)::{lambda(double, double)#1}>"),
    _REDUCE.format(acc="float", op="func_wrapper_t<float, at::native::MaxNanFunctor<float> >"),
    "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >",
    "Memset (Device)", "_kahan_softmax_kernel", "aten::sum",
]

SASS = """
	code for sm_90a
		Function : _Z9fp8_gemmILi128EEvPKhS1_P13__nv_bfloat16
        /*0ab0*/                   QGMMA.64x128x32.F32.E4M3.E4M3 gdesc[UR4], RZ, !UPT ;
		Function : bf16_matmul_kernel
        /*0ab0*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
		Function : triton_poi_fused_to_copy_0
        /*0010*/                   F2FP.BF16.F32.PACK_AB R0, RZ, R0 ;
"""


def test_launch_audit_names_library_kernels_and_aten_ops():
    found = launch_audit(["aten::mm", "matmul_kernel", "nvjet_tst_128x256_64x4_1x2_h_bz_NNT",
                          "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"], GEMM)
    assert {f.klass for f in found} == {1} and len(found) == 3
    assert not launch_audit(["matmul_kernel", "triton_red_fused_sum_0", "aten::empty", "aten::mul"], GEMM)
    assert launch_audit(["void (anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)"],
                        SOFTMAX)
    assert launch_audit(["aten::_softmax"], SOFTMAX) and not launch_audit(["softmax_kernel"], SOFTMAX)


PLAIN_SASS = """
        Function : elementwise_kernel
        /*0000*/                   FADD R2, R2, R3 ;
"""


def test_sass_split_and_identifier_matching():
    kernels = split_functions(SASS, "x.so")
    assert [k.name for k in kernels][:2] == ["_Z9fp8_gemmILi128EEvPKhS1_P13__nv_bfloat16", "bf16_matmul_kernel"]
    assert base_identifier("void ns::fp8_gemm<128>(unsigned char const*, __nv_bfloat16*)") == "fp8_gemm"


def test_fp8_verdicts():
    kernels = split_functions(SASS, "x.so")
    [ok] = fp8_sass_check({"void fp8_gemm<128>(unsigned char const*)": 90.0, "triton_poi_fused_to_copy_0": 10.0},
                          kernels, required=["QGMMA", "QMMA"])
    assert ok.severity == "info" and "QGMMA" in ok.evidence
    [bad] = fp8_sass_check({"bf16_matmul_kernel": 90.0, "triton_poi_fused_to_copy_0": 10.0}, kernels)
    assert bad.severity == "error" and bad.klass == 14 and "HGMMA" in bad.evidence
    [decoy] = fp8_sass_check({"bf16_matmul_kernel": 90.0, "fp8_gemm": 1.0}, kernels)
    assert decoy.severity == "error"
    [unknown] = fp8_sass_check({"some_prebuilt_kernel": 5.0}, kernels)
    assert unknown.severity == "error" and "some_prebuilt_kernel" in unknown.evidence
    assert "cannot be read" in unknown.evidence and "is shown to hold" in unknown.message  # unproven, not disproven
    [both] = fp8_sass_check({"some_prebuilt_kernel": 5.0, "elementwise_kernel": 1.0},
                            [*kernels, *split_functions(PLAIN_SASS, "y.cubin")])
    assert both.severity == "error" and "holds no MMA: elementwise_kernel" in both.evidence
    [small] = fp8_sass_check({"fp8_gemm": 1.0, "elementwise_kernel": 9.0}, kernels)
    assert small.severity == "error" and "10%" in small.message


def _absorb(rows: int, vocab: int) -> torch.Tensor:
    x = torch.full((rows, vocab), math.log(2.0 ** -24 * 0.75))
    x[:, 0] = 0.0
    return x


def test_kahan_library_sums_are_refused_by_name_and_fp64_ones_allowed():
    for label, name in H100_SUMS.items():
        found = launch_audit([name, name, "_kahan_softmax_kernel"], KAHAN)
        assert [f.check for f in found] == ["kahan_library_sum"], label
        assert found[0].klass == 14 and "launched 2x" in found[0].evidence and "float64" in found[0].message
    assert not launch_audit(H100_ALLOWED, KAHAN)
    # the rule belongs to Kahan problems only: other problems may sum in fp32 as they like
    assert not launch_audit(list(H100_SUMS.values()), SOFTMAX)


def test_kahan_check_rejects_naive_and_accepts_compensated():
    x = _absorb(2, 4096)
    oracle = torch.softmax(x.double(), dim=-1)
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    total = torch.zeros(2)
    for column in e.unbind(dim=1):  # one sequential fp32 accumulator per row
        total = total + column
    naive = e / total[:, None]
    [f] = kahan_check(naive, oracle, 1e-6, case_id="absorb")
    assert f.klass == 14 and "Kahan fp32" in f.evidence and "> bound" in f.evidence
    assert not kahan_check(oracle.float(), oracle, 1e-6)


def test_template_hashing_restores_and_reports(tmp_path: Path):
    target = tmp_path / "problem.yaml"
    target.write_text("tolerance: 1e-5\n")
    created = tmp_path / "check.py"
    before = Snapshot.take([target, created])
    target.write_text("tolerance: 1e9\n")
    created.write_text("print('PASS')\n")
    found = grading_template_findings(before, tmp_path / "elsewhere")
    assert {Path(f.file).name for f in found} == {"problem.yaml", "check.py"} and all(f.klass == 12 for f in found)
    assert all(f.check == "template_hash" and f.severity == "error" for f in found)
    assert target.read_text() == "tolerance: 1e-5\n" and not created.exists()
    assert "1e9" in next(f.evidence for f in found if f.file.endswith("problem.yaml"))


def test_hook_helpers(tmp_path: Path):
    (tmp_path / "reference.py").write_text("import torch\nROW_SUM_BOUND = 2e-6\n")
    assert module_constant(tmp_path / "reference.py", "ROW_SUM_BOUND") == pytest.approx(2e-6)
    spec = SimpleNamespace(required_sass={"sm_90": ["QGMMA"], "sm_100": ["UTCQMMA"]})
    assert required_mnemonics(spec, "sm_90") == ["QGMMA"] and required_mnemonics(spec, "sm_90a") == ["QGMMA"]
    assert required_mnemonics(SimpleNamespace(required_sass={}), "sm_90") is None
