"""What a problem forbids, normalised once: python names, operator families, C++ calls and kernel names.

A problem.yaml lists a few names (`torch.mm`, `torch.nn.functional.softmax`); a solution can reach the same
library work through many doors (`x @ y`, `torch.einsum`, `Tensor.matmul`, `at::mm`, a cuBLAS kernel). The
families below widen a listed name to the doors that do the same work, so the lint and the launch audit are not
tuned to the spelling the problem author happened to choose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Each family: python leaf names, aten op names, C++ call patterns, library kernel-name signatures.
FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "gemm": {
        "leaves": ("mm", "matmul", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "tensordot", "linear",
                   "bilinear", "chain_matmul", "multi_dot", "_scaled_mm", "_scaled_grouped_mm", "_grouped_mm",
                   "_int_mm", "mv", "addmv", "dot", "vdot", "inner", "__matmul__", "__rmatmul__",
                   "_addmm_activation", "_weight_int4pack_mm", "_weight_int8pack_mm", "scaled_mm",
                   # a GEMM under another name: a 1x1 convolution, a weighted embedding bag
                   "conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d",
                   "conv_transpose2d", "conv_transpose3d", "mkldnn_convolution", "cudnn_convolution",
                   "_convolution_mode", "conv_tbc", "embedding_bag", "_embedding_bag",
                   "_embedding_bag_forward_only"),
        "cpp": (r"\bcublas\w*",
                (r"\b(?:at|torch)::(?:mm|matmul|bmm|addmm|baddbmm|linear|"
                 r"einsum|_scaled_mm|_int_mm|tensordot|_weight_int4pack_mm)\b"), r"\.(?:mm|matmul|addmm|bmm)\s*\("),
        "kernels": ("cublas", "xmma_gemm", "sm90_xmma", "sm80_xmma", "sm89_xmma", "sm100_xmma", "nvjet",
                    "ampere_bf16", "ampere_fp16", "ampere_sgemm",
                    "gemv2T_kernel", "gemv2N_kernel", "gemvx", "gemmk1_kernel", "gemmSN_", "splitKreduce_kernel",
                    "cutlass_80", "cutlass_90", "cutlass3x_", "implicit_convolve", "cudnn::",
                    "EmbeddingBag_updateOutputKernel", "embedding_bag_"),
    },
    "attention": {
        "leaves": ("scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                   "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                   "_flash_attention_forward", "_efficient_attention_forward", "multi_head_attention_forward",
                   "flex_attention", "flash_attn_func", "flash_attn_with_kvcache",
                   "flash_attn_varlen_func"),
        "cpp": (r"\b(?:at|torch)::(?:scaled_dot_product_attention|_scaled_dot_product_\w+|_flash_attention_\w+)",
                r"\bflash::\w+", r"\bcudnn\w*", r"\bmha_fwd\b"),
        "kernels": ("flash_fwd", "flash::", "pytorch_flash", "fmha", "efficient_attention", "cutlassF",
                    "cudnn", "attention_kernel_batched", "flash_attn"),
    },
    "softmax": {
        "leaves": ("softmax", "log_softmax", "_softmax", "_log_softmax", "Softmax", "LogSoftmax", "softmin",
                   "Softmin", "_safe_softmax"),
        "cpp": (r"\b(?:at|torch)::(?:softmax|_softmax|log_softmax|_log_softmax|_safe_softmax)\b",
                r"\.softmax\s*\(", r"\bcudnnSoftmax\w*"),
        "kernels": ("cunn_SoftMax", "softmax_warp_forward", "cudnn", "SoftMaxForward"),
    },
    "topk": {
        "leaves": ("topk", "sort", "argsort", "kthvalue", "msort", "_sort", "lexsort", "argpartition",
                   "sort_complex"),
        "cpp": (r"\b(?:at|torch)::(?:topk|sort|argsort|kthvalue)\b", r"\.topk\s*\(", r"\bcub::Device\w*Sort\w*",
                r"\bthrust::(?:sort|stable_sort)\w*"),
        "kernels": ("gatherTopK", "sbtopk", "mbtopk", "radixSort", "RadixSort", "bitonicSortKVInPlace",
                    "sortKeyValueInplace", "segmented_sort", "DeviceSegmentedSort", "computeBlockwiseWithinKCounts"),
    },
}

# CUTLASS and CuTe are templates a solution instantiates in its own sources (C++, or the CuTe DSL): the kernels
# they make are compiled here, from the solution's code, and are its work. Only the kernels NVIDIA's libraries ship
# prebuilt (cuBLAS's `cutlass_80_*` / `cutlass3x_*` instances among them) are a library call.

# Names that are also methods of plain Python objects: a bare `obj.sort()` is more likely a list.
AMBIGUOUS_METHODS = {"sort", "dot", "inner"}

# Libraries through which the same work can be reached besides torch.
LIBRARY_ROOTS = ("torch", "numpy", "cupy", "scipy", "jax", "flash_attn", "xformers", "transformer_engine",
                 "apex", "cublas", "nvmath", "cuda", "tensorflow", "sgl_kernel", "vllm", "flashinfer", "fla",
                 "deep_gemm", "thunderkittens", "liger_kernel", "bitsandbytes", "torchao", "triton.ops")

# Whole packages that are a library bypass whenever any GEMM/attention family is forbidden.
BYPASS_PACKAGES = {
    "gemm": ("cublas", "nvmath", "deep_gemm", "transformer_engine", "torchao", "bitsandbytes",
             "triton.ops", "vllm", "sgl_kernel", "flashinfer", "apex", "marlin", "gemlite"),
    "attention": ("flash_attn", "xformers", "flashinfer", "vllm", "sgl_kernel", "fla", "transformer_engine"),
    "softmax": ("liger_kernel", "apex", "transformer_engine"),
    "topk": ("vllm", "sgl_kernel", "flashinfer"),
}


@dataclass
class Rules:
    """The forbidden set of one problem, widened to families."""

    names: set[str] = field(default_factory=set)        # dotted python names listed by the problem
    leaves: dict[str, str] = field(default_factory=dict)  # leaf -> why (the listed name or family that covers it)
    families: set[str] = field(default_factory=set)
    matmul_operator: bool = False
    cpp_patterns: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    kernel_patterns: list[tuple[str, bool, str]] = field(default_factory=list)  # (text, case_sensitive, why)
    packages: dict[str, str] = field(default_factory=dict)  # package -> why
    # the reference's module globals that hold the current shape (a layout that rebinds globals per shape): reading
    # one tells the solution nothing its inputs do not
    shape_globals: set[str] = field(default_factory=set)

    def leaf_reason(self, leaf: str) -> str | None:
        return self.leaves.get(leaf)


def _family_of(leaf: str) -> str | None:
    for name, family in FAMILIES.items():
        if leaf in family["leaves"]:
            return name
    return None


def build_rules(forbidden: list[str], forbidden_kernels: list[str] | None = None) -> Rules:
    """Normalise problem.yaml's `forbidden` and `forbidden_kernels` into matchable rules."""
    rules = Rules()
    for entry in forbidden:
        entry = entry.strip()
        if entry in ("@", "operator.matmul", "__matmul__"):
            rules.matmul_operator = True
            _add_family(rules, "gemm", entry)
        elif "::" in entry:
            rules.cpp_patterns.append((re.compile(re.escape(entry) + r"\b"), entry))
        elif entry:
            rules.names.add(entry)
            leaf = entry.rsplit(".", 1)[-1]
            rules.leaves.setdefault(leaf, entry)
            family = _family_of(leaf)
            if family:
                _add_family(rules, family, entry)
            if "." not in entry:
                rules.packages.setdefault(entry, entry)
    for text in forbidden_kernels or []:
        rules.kernel_patterns.append((text, False, f"forbidden_kernels: {text}"))
    return rules


def _add_family(rules: Rules, family: str, because: str) -> None:
    if family in rules.families:
        return
    rules.families.add(family)
    why = f"same work as forbidden {because}"
    spec = FAMILIES[family]
    for leaf in spec["leaves"]:
        rules.leaves.setdefault(leaf, why)
    for pattern in spec["cpp"]:
        rules.cpp_patterns.append((re.compile(pattern), why))
    for text in spec["kernels"]:
        rules.kernel_patterns.append((text, True, f"library kernel ({family}), {why}"))
    for package in BYPASS_PACKAGES.get(family, ()):
        rules.packages.setdefault(package, f"library package ({family}), {why}")
    if family == "gemm":
        rules.matmul_operator = True
        rules.names.update({"operator.matmul", "operator.imatmul", "operator.__matmul__", "operator.__imatmul__"})


def rules_for_spec(spec) -> Rules:
    """Rules from a ProblemSpec (or anything with `forbidden` / `forbidden_kernels`)."""
    rules = build_rules(list(getattr(spec, "forbidden", []) or []), list(getattr(spec, "forbidden_kernels", []) or []))
    keys = {key for shape in getattr(spec, "shapes", None) or [] for key in shape}
    rules.shape_globals = keys | {key.upper() for key in keys}
    return rules
