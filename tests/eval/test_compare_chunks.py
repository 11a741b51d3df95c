"""The tolerance check over chunks of rows gives what one pass over the whole output would: the same verdict,
count, worst element and largest errors, wherever the chunks fall; and a NaN where NaN is expected excuses no
other element."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelbench.eval.portable import compare
from kernelbench.eval.portable.compare import compare_outputs

TOL = {"float32": {"atol": 1e-3, "rtol": 1e-2}}


def whole_pass(out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float):
    """The rule written out over every element at once: (out-of-tolerance count, first worst index, max |diff|)."""
    err = (out.double() - expected.double()).abs()
    excess = err - (atol + rtol * expected.double().abs())
    over = int((excess > 0).sum())
    worst = [int(i) for i in torch.unravel_index(excess.argmax(), expected.shape)] if over else None
    return over, worst, float(err.max())


shapes = st.lists(st.integers(1, 6), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, chunk=st.integers(1, 40), seed=st.integers(0, 2**31 - 1), wrong=st.integers(0, 6))
def test_chunks_agree_with_one_pass_over_the_whole_output(shape, chunk, seed, wrong, monkeypatch_chunk):
    monkeypatch_chunk(chunk)  # set again for each example, so the fixture's one setting is never stale
    gen = torch.Generator().manual_seed(seed)
    expected = torch.randn(shape, generator=gen)
    out = expected.clone()
    flat = out.reshape(-1)
    for _ in range(wrong):  # a few elements off, some by the same amount (ties: the first one is the worst)
        flat[int(torch.randint(flat.numel(), (1,), generator=gen))] += float(torch.randint(1, 3, (1,), generator=gen))
    result = compare_outputs(out, expected, TOL)
    over, worst, max_abs = whole_pass(out, expected, 1e-3, 1e-2)
    assert result.ok == (over == 0)
    assert math.isclose(result.max_abs_err, max_abs)
    if over:
        assert f"{over} of {expected.numel()} elements out of tolerance" in result.messages[0]
        assert result.worst_index == worst


@pytest.mark.parametrize("chunk", [1, 3, 1 << 22])
def test_a_nan_where_nan_is_expected_excuses_no_other_element(chunk, monkeypatch_chunk):
    """It once did: the largest excess over the output was NaN, and NaN > 0 is false, so every other element of
    an output whose expected value held one NaN passed whatever it was."""
    monkeypatch_chunk(chunk)
    expected = torch.tensor([[1.0, float("nan")], [3.0, 4.0]])
    out = torch.tensor([[100.0, float("nan")], [-50.0, 4.0]])
    result = compare_outputs(out, expected, TOL)
    assert not result.ok
    assert "2 of 4 elements out of tolerance; worst at index [0, 0]" in result.messages[0]
    assert compare_outputs(expected.clone(), expected, TOL).ok


def test_the_first_non_finite_mismatch_is_named_across_chunks(monkeypatch_chunk):
    monkeypatch_chunk(2)
    expected = torch.zeros(4, 3)
    out = expected.clone()
    out[2, 1], out[3, 0] = float("inf"), float("nan")
    result = compare_outputs(out, expected, TOL)
    assert result.messages == ["output: 2 of 12 elements are NaN/Inf where the expected value differs; first at "
                               "index [2, 1]: got inf, expected 0.0"]


@pytest.fixture
def monkeypatch_chunk(monkeypatch):
    """Chunks of a given number of elements (whole rows at least)."""
    return lambda elements: monkeypatch.setattr(compare, "_CHUNK_ELEMENTS", elements)


specials = st.sampled_from([float("nan"), float("inf"), float("-inf")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=shapes, chunk=st.integers(1, 40), seed=st.integers(0, 2**31 - 1), wrong=st.integers(0, 3),
       special=specials, where=st.integers(0, 10**6), same=st.booleans())
def test_with_a_non_finite_value_the_verdict_is_the_rule_written_out(shape, chunk, seed, wrong, special, where,
                                                                      same, monkeypatch_chunk):
    """One non-finite value in the expected output (the candidate holding the same, or not): a mismatch of
    non-finite values fails; else the output passes exactly when every element whose expected value is finite is
    within tolerance."""
    monkeypatch_chunk(chunk)
    gen = torch.Generator().manual_seed(seed)
    expected = torch.randn(shape, generator=gen)
    out = expected.clone()
    for _ in range(wrong):
        out.reshape(-1)[int(torch.randint(out.numel(), (1,), generator=gen))] += 1.0
    at = where % expected.numel()
    expected.reshape(-1)[at] = special
    out.reshape(-1)[at] = special if same else 0.0
    result = compare_outputs(out, expected, TOL)
    if not same:
        assert not result.ok and "NaN/Inf where the expected value differs" in result.messages[0]
        return
    finite = torch.isfinite(expected)
    beyond = ((out - expected).abs() > 1e-3 + 1e-2 * expected.abs()) & finite
    assert result.ok == (not bool(beyond.any())), result.messages
