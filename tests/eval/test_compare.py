import math

import pytest
import torch

from kernelbench.eval.portable.compare import compare_outputs, tolerance_for

TOL = {"float32": {"atol": 1e-4, "rtol": 1e-4}}


@pytest.fixture
def expected():
    return torch.randn(8, 6, generator=torch.Generator().manual_seed(0))


def test_identical_output_passes(expected):
    result = compare_outputs(expected.clone(), expected, TOL)
    assert result.ok and result.max_abs_err == 0


def test_wrong_element_reports_worst_index_and_tolerance(expected):
    out = expected.clone()
    out[5, 2] += 0.5
    out[1, 1] += 0.01
    result = compare_outputs(out, expected, TOL)
    assert not result.ok and result.worst_index == [5, 2]
    assert "worst at index [5, 2]" in result.messages[0] and "atol=0.0001" in result.messages[0]
    assert "2 of 48 elements" in result.messages[0]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_fails_even_within_a_huge_tolerance(expected, value):
    out = expected.clone()
    out[0, 0] = value
    result = compare_outputs(out, expected, {"float32": {"atol": 1e30, "rtol": 1e30}})
    assert not result.ok and "NaN/Inf" in result.messages[0]


def test_matching_nan_where_expected_is_nan(expected):
    expected = expected.clone()
    expected[2, 2] = math.nan
    assert compare_outputs(expected.clone(), expected, TOL).ok


def test_metadata_checks(expected):
    assert "dtype torch.float64" in compare_outputs(expected.double(), expected, TOL).messages[0]
    assert "shape (6, 8)" in compare_outputs(expected.t().contiguous(), expected, TOL).messages[0]
    assert "strides" in compare_outputs(expected.t().contiguous().t(), expected, TOL).messages[0]
    assert "expected a tuple" in compare_outputs([expected], (expected, expected), TOL).messages[0] or \
        "2" in compare_outputs([expected], (expected, expected), TOL).messages[0]


def test_tensor_subclass_is_refused(expected):
    class Lazy(torch.Tensor):
        pass

    result = compare_outputs(expected.clone().as_subclass(Lazy), expected, TOL)
    assert not result.ok and "not exactly torch.Tensor" in result.messages[0]
    assert not compare_outputs(expected.numpy(), expected, TOL).ok


def test_integers_compare_exactly():
    exp = torch.tensor([3, 1, 2])
    result = compare_outputs(torch.tensor([3, 2, 2]), exp, {})
    assert not result.ok and "index [1]" in result.messages[0]


def test_tolerance_lookup_prefers_the_problem():
    assert tolerance_for(torch.bfloat16, {"bfloat16": {"atol": 0.5, "rtol": 0.25}}) == (0.5, 0.25)
    assert tolerance_for(torch.bfloat16, {}) == (2e-2, 2e-2)
    assert tolerance_for(torch.int64, {}) == (0.0, 0.0)


def test_row_rtol_allows_error_proportional_to_the_row_magnitude():
    """A cancelled output in a large row may be off by row_rtol × the row's rms, and not by more."""
    expected = torch.tensor([[100.0, -100.0, 0.01, 100.0], [1.0, 1.0, 0.01, 1.0]])
    rms_row0 = float(expected[0].square().mean().sqrt())
    near = expected.clone()
    near[0, 2] += 0.5 * 4e-3 * rms_row0           # inside the row term, far outside atol + rtol·|e|
    plain = {"float32": {"atol": 1e-3, "rtol": 1e-3}}
    with_row = {"float32": {"atol": 1e-3, "rtol": 1e-3, "row_rtol": 4e-3}}
    assert not compare_outputs(near, expected, plain).ok
    assert compare_outputs(near, expected, with_row).ok
    far = expected.clone()
    far[1, 2] += 0.5 * 4e-3 * rms_row0            # the same error in a small row is still wrong
    result = compare_outputs(far, expected, with_row)
    assert not result.ok and "row_rtol=0.004" in result.messages[0] and result.worst_index == [1, 2]
