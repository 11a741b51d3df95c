"""09's check of the fp8 codes: a share of one-step differences at rounding ties, with a floor of codes for the
small stress shapes, where the share alone allows none."""

from __future__ import annotations

import torch

from tests.problems.conftest import load_reference

REF = load_reference("09_add_rmsnorm_fp8_quant")
TOL = {"bfloat16": {"atol": 1e-6, "rtol": 8e-3}, "float32": {"atol": 1e-9, "rtol": 1e-4}}


def _expected(tokens: int = 5, hidden: int = 72):
    shape = {"tokens": tokens, "hidden": hidden}
    torch.manual_seed(0)
    model = REF.Model(**REF.get_init_kwargs(shape))
    inputs = REF.get_inputs(shape, 3, "cpu")
    return model(*inputs), inputs


def _one_step_up(q: torch.Tensor, count: int) -> torch.Tensor:
    """`count` codes moved one e4m3 step away from zero (the next code up in magnitude)."""
    bits = q.view(torch.uint8).clone().flatten()
    moved = 0
    for i in range(bits.numel()):
        if moved == count:
            break
        if bits[i] & 0x7F not in (0, 0x7E):  # neither zero nor the largest finite code
            bits[i] += 1
            moved += 1
    return bits.view(q.shape).view(torch.float8_e4m3fn)


def test_up_to_the_floor_of_tie_codes_on_a_small_shape_pass():
    (q, scale, h), inputs = _expected()
    for count in (1, 4, REF.MIN_STEP_MISMATCH_CODES):
        assert REF.compare((_one_step_up(q, count), scale, h), (q, scale, h), inputs, TOL) == [], count


def test_one_code_beyond_the_floor_fails_and_says_how_many():
    (q, scale, h), inputs = _expected()
    beyond = REF.MIN_STEP_MISMATCH_CODES + 1
    problems = REF.compare((_one_step_up(q, beyond), scale, h), (q, scale, h), inputs, TOL)
    assert any(f"{beyond} of 360 fp8 codes" in p for p in problems), problems


def test_the_share_still_rules_large_outputs():
    (q, scale, h), inputs = _expected(tokens=128, hidden=256)  # 32768 codes: 0.1 % is 32, above the floor
    assert REF.compare((_one_step_up(q, 32), scale, h), (q, scale, h), inputs, TOL) == []
    assert REF.compare((_one_step_up(q, 33), scale, h), (q, scale, h), inputs, TOL)
