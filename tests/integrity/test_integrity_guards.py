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
from kernelbench.eval.integrity.sass import base_identifier, fp8_sass_check, fp8_shape_findings, match_kernel, split_functions
from kernelbench.eval.integrity.templates import Snapshot, grading_template_findings

REPO = Path(__file__).resolve().parents[2]
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


def _errors(found):
    return [f for f in found if f.severity == "error"]


def test_fp8_verdicts():
    kernels = split_functions(SASS, "x.so")
    found = fp8_sass_check({"void fp8_gemm<128>(unsigned char const*)": 90.0, "triton_poi_fused_to_copy_0": 10.0},
                           kernels, required=["QGMMA", "QMMA"])
    assert not _errors(found) and "QGMMA" in found[-1].evidence and "100%" in found[-1].message
    assert "triton_poi_fused_to_copy_0' moves data" in found[-1].evidence  # a cast: left out of the share
    [bad] = _errors(fp8_sass_check({"bf16_matmul_kernel": 90.0, "triton_poi_fused_to_copy_0": 10.0}, kernels))
    assert bad.klass == 14 and "HGMMA" in bad.evidence
    [decoy] = _errors(fp8_sass_check({"bf16_matmul_kernel": 90.0, "fp8_gemm": 1.0}, kernels))
    assert "1%" in decoy.message
    [unknown] = _errors(fp8_sass_check({"some_prebuilt_kernel": 5.0}, kernels))
    assert "some_prebuilt_kernel" in unknown.evidence and "no binary" in unknown.evidence
    assert "is shown to hold" in unknown.message  # unproven, not disproven
    [both] = _errors(fp8_sass_check({"some_prebuilt_kernel": 5.0, "elementwise_kernel": 1.0},
                                    [*kernels, *split_functions(PLAIN_SASS, "y.cubin")]))
    assert "holds no MMA: elementwise_kernel" in both.evidence
    # a GEMM on CUDA cores beside a token FP8 kernel: its multiply-adds count against the rule; a kernel that only
    # moves data (a pad, a fill: no MMA, few multiply-adds) is left out
    fma = "Function : cuda_core_gemm\n" + "        /*0000*/  FFMA R2, R4, R5, R2 ;\n" * 64
    code = [*kernels, *split_functions(PLAIN_SASS, "y.cubin"), *split_functions(fma, "z.cubin")]
    [small] = _errors(fp8_sass_check({"fp8_gemm": 1.0, "cuda_core_gemm": 9.0, "elementwise_kernel": 90.0}, code))
    assert "10%" in small.message and "multiply-adds" in small.evidence
    assert not _errors(fp8_sass_check({"fp8_gemm": 1.0, "elementwise_kernel": 9.0}, code))


def test_the_fp8_rule_is_one_share_per_shape():
    """On every shape, at least half of the device time in FP8-MMA kernels; a small-M path on its own tensor-core
    code is judged on its own shape, and a deck whose rules allow an up-cast only reports it."""
    kernels = split_functions(SASS, "x.so")
    per_shape = {0: {"fp8_gemm": 97.0, "triton_poi_fused_to_copy_0": 3.0},
                 1: {"fp8_gemm": 40.0, "bf16_matmul_kernel": 60.0},
                 2: {"fp8_gemm": 60.0, "bf16_matmul_kernel": 40.0}}
    code_of = lambda name: match_kernel(name, kernels)  # noqa: E731
    found = fp8_shape_findings(per_shape, code_of, [], ["QGMMA"], enforce=True)
    [error] = _errors(found)
    assert error.message.startswith("shape 1:") and "40%" in error.message and "HGMMA" in error.evidence
    summary = found[-1]
    assert summary.severity == "info" and "shape 0: 100%" in summary.message and "shape 2: 60%" in summary.message
    reported = fp8_shape_findings(per_shape, code_of, [], ["QGMMA"], enforce=False)
    assert not _errors(reported) and [f.severity for f in reported] == ["warning", "info"]


def test_kernels_the_solution_compiled_are_its_work_whatever_their_name():
    """A kernel compiled from the solution's sources while grading may be named like a library's (`flash_fwd`, a
    CUTLASS template instance); one it brought prebuilt, or one named by NVIDIA's libraries, is not its work."""
    from kernelbench.eval.integrity.machine_code import MachineCode

    def kernel(name):
        return split_functions(f"Function : {name}\n HMMA.16816.F32 R0, R2, R4, R0 ;\n", "x.cubin")[0]

    code = MachineCode.of_kernels([kernel("_Z16flash_fwd_kernelv"), kernel("nvjet_tst_128x256_64x4")],
                                  brought=[kernel("_Z15gatherTopK_copyv")])
    attention = SimpleNamespace(forbidden=["torch.nn.functional.scaled_dot_product_attention"], forbidden_kernels=[])
    assert code.own("flash_fwd_kernel()") and not launch_audit(["flash_fwd_kernel()"], attention, code.own)
    assert launch_audit(["flash_fwd_kernel()"], attention)          # without the machine code: a library's
    topk = SimpleNamespace(forbidden=["torch.topk"], forbidden_kernels=[])
    assert not code.own("gatherTopK_copy()") and launch_audit(["gatherTopK_copy()"], topk, code.own)
    assert not code.own("nvjet_tst_128x256_64x4") and launch_audit(["nvjet_tst_128x256_64x4"], GEMM, code.own)



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


def test_the_reference_s_code_is_recognised_wherever_it_was_loaded_from(tmp_path):
    """A copy of reference.py under another name runs the same code objects: the watch names the reference."""
    import importlib.util

    from kernelbench.eval.integrity.profiling import watch_code

    reference = REPO / "problems" / "04_kahan_softmax" / "reference.py"
    copy = tmp_path / "renamed_helper.py"
    copy.write_text(reference.read_text())
    spec = importlib.util.spec_from_file_location("renamed_helper", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shape = {"rows": 2, "vocab": 64}
    model = module.Model(**module.get_init_kwargs(shape))
    (x,) = module.get_inputs(shape, 1, "cpu")
    with watch_code([reference]) as ran:
        model(x)
    assert any(name.startswith("python::reference.py:") and "forward" in name for name in ran), ran
    with watch_code([reference]) as ran:
        torch.softmax(x.double(), dim=-1)
    assert not ran


def test_a_deck_that_asks_for_a_custom_kernel_refuses_only_a_solution_that_compiled_none():
    """KernelBench-Hard's prompts ask for "a real custom kernel": a solution whose every kernel on every shape is a
    prebuilt library's (batched torch ops on cuBLAS) is INVALID; one that runs its own on some shapes is not."""
    from kernelbench.eval.integrity.machine_code import MachineCode, custom_kernel_findings

    code = MachineCode.of_kernels(split_functions("Function : my_topk_kernel\n HMMA.16816.F32 R0, R2, R4, R0 ;\n",
                                                  "t.cubin"))
    cublas = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
    library_only = {0: {cublas: 80.0, "void at::native::reduce_kernel<512, 1>": 20.0, fill: 5.0}, 1: {cublas: 50.0}}
    [verdict] = custom_kernel_findings(library_only, code)
    assert verdict.severity == "error" and verdict.klass == 1 and "nvjet" in verdict.evidence
    assert "prebuilt" in verdict.evidence and "FillFunctor" not in verdict.evidence
    by_shape = {0: {"my_topk_kernel": 10.0, fill: 1.0}, 1: {cublas: 50.0}}
    [lead] = custom_kernel_findings(by_shape, code)
    assert lead.severity == "warning" and lead.message.startswith("shape 1:")
    assert custom_kernel_findings({0: {"my_topk_kernel": 10.0}}, code) == []


def test_reading_machine_code_reports_what_each_binary_cost(tmp_path):
    """The launch audit reads every binary a grading built; each read is logged with its sizes and seconds, so a
    grading whose audit takes minutes names the binary that cost them."""
    from kernelbench.eval.integrity.sass import collect_sass

    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "ext.so").write_bytes(b"\x7fELF" + b"\0" * 60)
    (tmp_path / "build" / "notes.txt").write_text("not a binary")
    tool = tmp_path / "cuobjdump"
    tool.write_text("#!/bin/sh\nprintf '\\tFunction : _Z6kernelPf\\n\\t/*0000*/ FFMA R0, R1, R2, R3 ;\\n"
                    "\\tFunction : other\\n\\t/*0000*/ EXIT ;\\n'\n")
    tool.chmod(0o755)
    costs: list[str] = []
    kernels, errors = collect_sass([tmp_path / "build"], cuobjdump=str(tool), costs=costs)
    assert [k.name for k in kernels] == ["_Z6kernelPf", "other"] and errors == []
    [line] = costs
    assert line.startswith("ext.so: 64 bytes, listing ") and "2 functions" in line and line.endswith(" s")
