"""04_kahan_softmax rejects uncompensated fp32 accumulation: the published leak, closed numerically.

On the "absorb" rows, four ways of accumulating the normaliser are simulated exactly in IEEE float32 with numpy
(which never widens float32 arithmetic): a sequential loop, a strided per-thread loop followed by a tree, chunked
online accumulation (tree inside each chunk, sequential across chunks) - the shapes of the published leaky
solutions - and Kahan. The first three must break the problem's bound, Kahan and float64 must meet it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.problems.conftest import load_reference

TOL = {"float32": {"atol": 1e-12, "rtol": 1e-5}}
SHAPE = {"rows": 6, "vocab": 65536}


@pytest.fixture(scope="module")
def reference():
    return load_reference("04_kahan_softmax")


@pytest.fixture(scope="module")
def absorb_case(reference):
    (x,) = reference.get_inputs(SHAPE, 42, "cpu", "absorb")
    terms = np.exp((x - x.amax(dim=-1, keepdim=True)).numpy()).astype(np.float32)
    return x, terms


def sequential_sum(terms: np.ndarray) -> np.ndarray:
    total = np.zeros(terms.shape[0], np.float32)
    for j in range(terms.shape[1]):
        total = total + terms[:, j]
    return total


def strided_threads_sum(terms: np.ndarray, threads: int = 256) -> np.ndarray:
    """Thread t adds elements t, t+threads, ... in order; then a pairwise tree over the threads."""
    partial = np.zeros((terms.shape[0], threads), np.float32)
    terms = np.pad(terms, ((0, 0), (0, -terms.shape[1] % threads)))
    for start in range(0, terms.shape[1], threads):
        partial = partial + terms[:, start:start + threads]
    while partial.shape[1] > 1:
        partial = partial[:, 0::2] + partial[:, 1::2]
    return partial[:, 0]


def chunked_online_sum(terms: np.ndarray, block: int = 1024) -> np.ndarray:
    total = np.zeros(terms.shape[0], np.float32)
    for start in range(0, terms.shape[1], block):
        total = total + terms[:, start:start + block].sum(axis=1, dtype=np.float32)
    return total


def kahan_sum(terms: np.ndarray) -> np.ndarray:
    total = np.zeros(terms.shape[0], np.float32)
    comp = np.zeros(terms.shape[0], np.float32)
    for j in range(terms.shape[1]):
        y = terms[:, j] - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total


def fp64_sum(terms: np.ndarray) -> np.ndarray:
    return terms.astype(np.float64).sum(axis=1).astype(np.float32)


def normalised(terms: np.ndarray, row_sum: np.ndarray) -> torch.Tensor:
    return torch.from_numpy((terms / row_sum[:, None]).astype(np.float32))


def check(reference, x, y) -> list[str]:
    expected = reference.Model(SHAPE["vocab"])(x)
    return reference.compare(y, expected, [x], TOL)


@pytest.mark.parametrize("accumulate", [sequential_sum, strided_threads_sum, chunked_online_sum])
def test_uncompensated_fp32_accumulation_fails_the_bound(reference, absorb_case, accumulate):
    x, terms = absorb_case
    y = normalised(terms, accumulate(terms))
    row_err = (y.double().sum(dim=-1) - 1).abs()
    assert row_err.max() > reference.ROW_SUM_BOUND
    assert any("normalisation" in p for p in check(reference, x, y))


@pytest.mark.parametrize("accumulate", [kahan_sum, fp64_sum])
def test_compensated_or_fp64_accumulation_meets_the_bound(reference, absorb_case, accumulate):
    x, terms = absorb_case
    y = normalised(terms, accumulate(terms))
    row_err = (y.double().sum(dim=-1) - 1).abs()
    assert row_err.max() < reference.ROW_SUM_BOUND / 4
    assert check(reference, x, y) == []


def test_kahan_meets_the_bound_on_ordinary_rows(reference):
    (x,) = reference.get_inputs(SHAPE, 7, "cpu", "base")
    terms = np.exp((x - x.amax(dim=-1, keepdim=True)).numpy()).astype(np.float32)
    assert check(reference, x, normalised(terms, kahan_sum(terms))) == []


def test_absorb_rows_hide_the_small_mass_below_half_an_ulp(reference, absorb_case):
    """The construction itself: tiny terms are under 2**-24 yet together 5e-6 or more of every row's sum."""
    _, terms = absorb_case
    tiny = terms.min(axis=1).astype(np.float64)
    assert (tiny < 2.0 ** -24).all()
    big_mass = (terms == 1.0).sum(axis=1)
    small_mass = terms.astype(np.float64).sum(axis=1) - big_mass
    assert (small_mass / big_mass > 2 * reference.ROW_SUM_BOUND).all()


# ------------------------------------------------------------------------------------------- per-lane Kahan

def per_lane_kahan(terms: np.ndarray, lanes: int, compensated_combine: bool) -> np.ndarray:
    """Lane j Kahan-sums elements j, j+lanes, ... (as the Triton solution does across chunks); then lanes are
    combined the way a GPU reduction does it: 32 per thread one after another, then a tree over threads."""
    rows = terms.shape[0]
    blocks = terms.reshape(rows, -1, lanes)
    total = np.zeros((rows, lanes), np.float32)
    comp = np.zeros((rows, lanes), np.float32)
    for chunk in range(blocks.shape[1]):
        y = blocks[:, chunk] - comp
        t = total + y
        comp = (t - total) - y
        total = t
    err = -comp
    if not compensated_combine:
        total, err = total + err, np.zeros_like(err)
    s, e = total.reshape(rows, -1, 32)[:, :, 0], err.reshape(rows, -1, 32)[:, :, 0]
    for i in range(1, 32):
        s, e = two_sum(s, e, total.reshape(rows, -1, 32)[:, :, i], err.reshape(rows, -1, 32)[:, :, i],
                       compensated_combine)
    while s.shape[1] > 1:
        s, e = two_sum(s[:, 0::2], e[:, 0::2], s[:, 1::2], e[:, 1::2], compensated_combine)
    return (s[:, 0] + e[:, 0]).astype(np.float32)


def two_sum(a, ea, b, eb, compensated: bool):
    total = (a + b).astype(np.float32)
    if not compensated:
        return total, ea + eb
    b_part = total - a
    lost = (a - (total - b_part)) + (b - b_part)
    return total, ea + eb + lost


def test_per_lane_kahan_needs_a_compensated_lane_combine(reference):
    """Seen on the H100: per-lane Kahan with a plain tl.sum over the lanes lost 1.4e-6 of an absorb row."""
    shape = {"rows": 6, "vocab": 262144}
    (x,) = reference.get_inputs(shape, 42, "cpu", "absorb")
    terms = np.exp((x - x.amax(dim=-1, keepdim=True)).numpy()).astype(np.float32)
    expected = reference.Model(shape["vocab"])(x)
    plain = normalised(terms, per_lane_kahan(terms, 4096, compensated_combine=False))
    fixed = normalised(terms, per_lane_kahan(terms, 4096, compensated_combine=True))
    assert any("normalisation" in p for p in reference.compare(plain, expected, [x], TOL))
    assert reference.compare(fixed, expected, [x], TOL) == []
