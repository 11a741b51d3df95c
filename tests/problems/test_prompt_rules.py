"""Every problem's PROMPT.txt and its rules say the same thing: what the prompt calls fine is not forbidden, what
the rules forbid the prompt names, and an FP8 problem's prompt states the tensor-core rule the grader applies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelbench.eval.integrity.hooks import fp8_enforced
from kernelbench.eval.integrity.rules import FAMILIES, rules_for_spec
from kernelbench.eval.integrity.sass import MIN_FP8_SHARE
from kernelbench.problems.loader import load_problem_spec

DECK = Path(__file__).resolve().parents[2] / "problems"
PROBLEMS = sorted(p for p in DECK.iterdir() if (p / "problem.yaml").is_file())
# the tools a prompt may tell the agent to use; none of them may be forbidden by its rules
TOOLS = ("Triton", "CUTLASS", "CuTe", "CUDA", "PTX")
# how a prompt may name a forbidden entry other than by its last dotted part
SPOKEN = {"__matmul__": "@", "matmul": "@", "reference": "reference.py", "linear": "F.linear",
          "transformer_engine": "Transformer Engine", "deep_gemm": "DeepGEMM", "flash_linear_attention": "fla",
          "fla_core": "fla", "kernel_fun": "fla", "nn.attention": "torch.nn.attention", "sgl_kernel": "SGLang",
          "auto_gptq": "GPTQ", "gptqmodel": "GPTQ", "exllamav2": "ExLlama", "nanquantile": "quantile",
          "_fused_rms_norm": "fused aten op", "fused_rms_norm": "fused aten op",
          "convert_weight_to_int4pack": "_weight_int4pack_mm and friends"}


def _leaf(entry: str) -> str:
    return entry.rsplit(".", 1)[-1].strip("_") or entry


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[_\-]", " ", text.lower()).split())


def _mentions(prompt: str, word: str) -> bool:
    return bool(word) and _plain(word) in _plain(prompt)


def _named(prompt: str, entry: str) -> bool:
    """Named itself, or (a torch name) through its family: a prompt that forbids "torch matmul-family ops (mm,
    matmul/@, ...)" forbids baddbmm and tensordot too, as the rules widen one to the other."""
    if any(_mentions(prompt, w) for w in (_leaf(entry), entry, SPOKEN.get(_leaf(entry), ""), SPOKEN.get(entry, ""))):
        return True
    family = next((f for f in FAMILIES.values() if _leaf(entry) in {x.strip("_") for x in f["leaves"]}), None)
    return entry.startswith("torch.") and family is not None and \
        any(re.search(rf"\b{re.escape(leaf)}\b", prompt) for leaf in family["leaves"] if len(leaf) > 3)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_the_tools_the_prompt_offers_are_not_forbidden(problem: Path):
    prompt = (problem / "PROMPT.txt").read_text()
    spec = load_problem_spec(problem)
    rules = rules_for_spec(spec)
    offered = [t for t in TOOLS if re.search(rf"\b{t}\b", prompt)]
    for tool in offered:
        low = tool.lower()
        assert low not in rules.packages, f"{problem.name}: the prompt offers {tool}, the rules forbid the package"
        assert not any(low == text.lower() or text.lower().startswith(low + "::")
                       for text, _, _ in rules.kernel_patterns), f"{problem.name}: {tool} kernels are forbidden"
        assert not any(pattern.search(f"{low}::gemm::device::Gemm") for pattern, _ in rules.cpp_patterns
                       if low in pattern.pattern.lower()), f"{problem.name}: {tool} templates are forbidden"
        assert not any(_leaf(e).lower() == low for e in spec.forbidden), f"{problem.name}: {tool} is forbidden"


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_the_prompt_names_what_the_rules_forbid(problem: Path):
    prompt = (problem / "PROMPT.txt").read_text()
    unnamed = [e for e in load_problem_spec(problem).forbidden if not _named(prompt, e)]
    assert not unnamed, f"{problem.name}: problem.yaml forbids {unnamed}, which PROMPT.txt never names"


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_an_fp8_prompt_states_the_rule_the_grader_applies(problem: Path):
    spec = load_problem_spec(problem)
    if not fp8_enforced(spec):
        pytest.skip("not an FP8 tensor-core problem")
    prompt = " ".join((problem / "PROMPT.txt").read_text().split())
    assert MIN_FP8_SHARE == 0.5 and "on every shape at least half of the device time" in prompt
