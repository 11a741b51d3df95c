"""02_kda: the eager solution's chunked (WY/UT) form equals the token-by-token recurrence over several chunks,
including under fast decay, where a chunked form that divides by cumulative decays would overflow."""

from __future__ import annotations

import pytest
import torch

from tests.problems.conftest import load_reference, load_solution

SHAPE = {"batch": 2, "seq_len": 200, "num_heads": 2, "head_dim": 32}


@pytest.mark.parametrize("case", ["base", "fast_decay", "long_memory"])
def test_chunked_form_matches_the_recurrence_across_chunks(case):
    reference = load_reference("02_kda")
    chunked = load_solution("eager", "02_kda")
    inputs = reference.get_inputs(SHAPE, 3, "cpu", case)
    want = reference.Model(2, 32)(*inputs).float()
    got = chunked.Model(2, 32)(*inputs).float()
    assert torch.isfinite(got).all()
    assert torch.allclose(got, want, atol=1e-3, rtol=2e-2), (got - want).abs().max()
