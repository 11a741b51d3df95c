"""09's scale: the spec admits the mean square over h rounded to bf16 (the reference) or over the fp32 sum before
rounding (torch.compile's fused kernel of the reference on a GPU). A kernel of either way passes every check and is
not measured as lower precision; a scale off beyond both, or summed in bf16, still fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelbench.eval.portable.compare import compare_outputs
from kernelbench.eval.verdict import error_size_findings
from kernelbench.eval.worker.comparison import error_sizes
from kernelbench.problems.loader import load_problem_spec
from tests.problems.conftest import load_reference

REF = load_reference("09_add_rmsnorm_fp8_quant")
PROBLEM = Path(__file__).resolve().parents[2] / "problems" / "09_add_rmsnorm_fp8_quant"
TOLERANCE = {k: v.model_dump() for k, v in load_problem_spec(PROBLEM).tolerance.items()}
CASES = [({"tokens": 64, "hidden": 256}, "base"), ({"tokens": 64, "hidden": 256}, "outliers"),
         ({"tokens": 32, "hidden": 2880}, "heavy_tailed"), ({"tokens": 5, "hidden": 72}, "base")]


def _quantised(h: torch.Tensor, mean_square: torch.Tensor, weight: torch.Tensor):
    y = h.float() * torch.rsqrt(mean_square + REF.EPS) * weight.float()
    scale = y.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / REF.FP8_MAX
    return (y / scale).clamp(-REF.FP8_MAX, REF.FP8_MAX).to(REF.FP8), scale, h


def _compiled_way(model, x, residual):
    """The mean square of the fp32 sum, the rounded h normalised (inductor's fused kernel of the reference)."""
    total = x.float() + residual.float()
    return _quantised(total.to(torch.bfloat16), total.pow(2).mean(dim=-1, keepdim=True), model.weight)


def _bf16_sum(model, x, residual):
    """The mean square accumulated in bf16: lower precision than the spec asks."""
    h = (x.float() + residual.float()).to(torch.bfloat16)
    acc = torch.zeros(h.shape[0], 1, dtype=torch.bfloat16)
    for column in h.pow(2).unbind(dim=-1):
        acc = acc + column.unsqueeze(-1)
    return _quantised(h, (acc / h.shape[-1]).float(), model.weight)


def _case(shape, distribution, seed=7):
    torch.manual_seed(seed)
    model = REF.Model(**REF.get_init_kwargs(shape))
    inputs = REF.get_inputs(shape, seed, "cpu", case=distribution)
    with torch.no_grad():
        return model, inputs, model(*inputs), REF.oracle(model, *inputs)


def _judged(out, expected, inputs) -> list[str]:
    """What the grader's comparer asks of an output: the problem's tolerance element by element, then its hook."""
    messages = compare_outputs(out, expected, TOLERANCE, inputs).messages
    return messages or REF.compare(out, expected, inputs, TOLERANCE)


@pytest.mark.parametrize("shape,distribution", CASES)
def test_the_compiled_kernels_mean_square_passes_and_is_not_lower_precision(shape, distribution):
    model, inputs, expected, oracle = _case(shape, distribution)
    out = _compiled_way(model, *inputs)
    _, high = REF.scale_bounds(expected[1], expected[2], inputs)
    assert bool(((out[1].double() - expected[1].double()).abs() > 1e-4 * high).any()), \
        "the case should tell the two ways apart by more than the old tolerance"
    assert _judged(out, expected, inputs) == []
    for size in error_sizes(out, expected, oracle):
        assert error_size_findings("case", size) == [], size
    for size in error_sizes(expected, expected, oracle):  # the reference itself measures as it did
        assert error_size_findings("case", size) == [], size


@pytest.mark.parametrize("shape,distribution", CASES)
def test_a_scale_beyond_both_ways_fails_and_says_which_range(shape, distribution):
    _, inputs, expected, _ = _case(shape, distribution)
    q, scale, h = expected
    _, high = REF.scale_bounds(scale, h, inputs)
    off = scale.clone()
    off[0] = (high[0] * (1 + 3e-4)).float()
    problems = _judged((q, off, h), expected, inputs)
    assert any(p.startswith("scale: worst at [0, 0]") and "; 1 of" in p for p in problems), problems


def test_a_mean_square_summed_in_bf16_still_fails():
    model, inputs, expected, _ = _case({"tokens": 16, "hidden": 2048}, "base")
    out = _bf16_sum(model, *inputs)
    assert any(p.startswith("output[1]:") for p in _judged(out, expected, inputs))
    assert any(p.startswith("scale:") for p in REF.compare(out, expected, inputs, TOLERANCE))


def test_normalising_the_unrounded_sum_too_is_another_function():
    """FlashInfer's fused add-RMSNorm normalises the fp32 sum itself; the spec rounds h first, and the codes show it."""
    model, inputs, expected, _ = _case({"tokens": 64, "hidden": 256}, "base")
    total = inputs[0].float() + inputs[1].float()
    y = total * torch.rsqrt(total.pow(2).mean(dim=-1, keepdim=True) + REF.EPS) * model.weight.float()
    scale = y.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / REF.FP8_MAX
    out = ((y / scale).clamp(-REF.FP8_MAX, REF.FP8_MAX).to(REF.FP8), scale, total.to(torch.bfloat16))
    problems = _judged(out, expected, inputs)
    assert any(p.startswith("q: ") for p in problems) and any(p.startswith("scale:") for p in problems), problems


def test_without_the_inputs_the_scale_is_held_to_the_reference_alone():
    model, inputs, expected, _ = _case({"tokens": 64, "hidden": 256}, "outliers")
    out = _compiled_way(model, *inputs)
    assert any(p.startswith("scale:") for p in REF.compare(out, expected, None, TOLERANCE))


def test_the_compiled_kernels_way_passes_a_real_grading(tmp_path):
    """`kernelbench grade` on the smoke shapes, stress and property cases included (CPU)."""
    import json
    import subprocess
    import sys

    solution = tmp_path / "solution.py"
    solution.write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n"
        "    def __init__(self, hidden: int, eps: float = 1e-6):\n"
        "        super().__init__()\n        self.eps = eps\n"
        "        self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16), requires_grad=False)\n\n"
        "    def forward(self, x, residual):\n"
        "        total = x.float() + residual.float()\n        h = total.to(torch.bfloat16)\n"
        "        y = h.float() * torch.rsqrt(total.pow(2).mean(dim=-1, keepdim=True) + self.eps) "
        "* self.weight.float()\n"
        "        scale = y.abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / 448.0\n"
        "        return (y / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale, h\n")
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", str(PROBLEM),
                           "--device", "cpu", "--shapes", "smoke", "--json"],
                          check=False, capture_output=True, text=True, timeout=600)
    grading = json.loads(proc.stdout)["grading"]
    assert grading["outcome"] == "pass", grading["reasons"]
    assert all(c["passed"] for c in grading["checks"]) and len(grading["checks"]) >= 20
