"""Indices judged by what they select (problems whose own check does so, e.g. KernelBench-Hard's top-k): ties may
pick any equal element, a wrong or out-of-range index still fails."""

from __future__ import annotations

import torch

from kernelbench.eval.portable.compare import compare_outputs
from kernelbench.problems.spec import IndexOutput

RULE = [IndexOutput(output=1, input=0, values=0)]


def _topk(x, k, *, take_later_ties=False):
    values, indices = torch.topk(x, k)
    if take_later_ties:  # the last of equal elements instead of the first
        flipped = torch.topk(x.flip(-1), k)
        indices = x.shape[-1] - 1 - flipped.indices
    return values, indices


def test_a_tie_broken_the_other_way_passes_by_selection_and_fails_element_by_element():
    x = torch.tensor([[1.0, 5.0, 3.0, 5.0, 0.0]])
    expected, other = _topk(x, 2), _topk(x, 2, take_later_ties=True)
    assert not torch.equal(expected[1], other[1])
    assert compare_outputs(other, expected, {}, [x], RULE).ok
    assert not compare_outputs(other, expected, {}).ok  # without the rule: exact indices


def test_a_wrong_or_out_of_range_index_fails():
    x = torch.tensor([[1.0, 5.0, 3.0, 4.0, 0.0]])
    values, indices = _topk(x, 2)
    wrong = indices.clone()
    wrong[0, 1] = 2
    result = compare_outputs((values, wrong), (values, indices), {}, [x], RULE)
    assert not result.ok and "elements at these indices" in result.messages[0]
    wrong[0, 1] = 7
    result = compare_outputs((values, wrong), (values, indices), {}, [x], RULE)
    assert not result.ok and "outside [0, 5)" in result.messages[0]


def test_the_foreign_top_k_problem_takes_the_rule():
    from pathlib import Path

    import pytest

    from kernelbench.problems.loader import load_problem_spec

    folder = Path(__file__).resolve().parents[2] / ".foreign" / "kernelbench.com" / "benchmarks" / "hard" / \
        "problems-h100" / "05_topk_bitonic"
    if not folder.is_dir():
        pytest.skip("the fetched kernelbench.com deck is not here (.foreign)")
    assert load_problem_spec(folder).index_outputs == RULE


def test_selected_values_have_no_precision_to_measure():
    """Top-k's values are elements of the input: an order among near-equal elements that differs from the
    reference's is the comparison's to judge (within the tolerance), not a precision downgrade."""
    from kernelbench.eval.worker.comparison import error_sizes

    x = torch.tensor([[1.0, 1.0000001, 3.0, 0.5]], dtype=torch.float32)
    expected = torch.topk(x, 2)
    swapped = (expected.values.flip(-1), expected.indices.flip(-1))
    oracle = (expected.values.double(), expected.indices)
    assert error_sizes(swapped, tuple(expected), oracle)              # measured without the rule
    assert error_sizes(swapped, tuple(expected), oracle, {0}) == []   # a selection: nothing to measure


def test_an_index_named_twice_in_a_row_fails_even_where_ties_make_the_values_match():
    """Row [5, 5, 3, 1], k = 2: indices [0, 0] gather [5, 5], the expected values, but select one element twice."""
    source = torch.tensor([[1.0, 2.0, 0.0, 4.0], [5.0, 5.0, 3.0, 1.0]])
    expected = (torch.tensor([[4.0, 2.0], [5.0, 5.0]]), torch.tensor([[3, 1], [0, 1]]))
    rule = IndexOutput(output=1, input=0, values=0)
    twice = compare_outputs((expected[0].clone(), torch.tensor([[3, 1], [0, 0]])), expected, {}, inputs=[source],
                            index_outputs=[rule])
    assert not twice.ok
    assert twice.messages == ["output[1]: row [1] holds index 0 more than once: the selected elements must be "
                              "distinct (a tie may pick any of the equal elements, but each element once)"]
    swapped_tie = compare_outputs((expected[0].clone(), torch.tensor([[3, 1], [1, 0]])), expected, {},
                                  inputs=[source], index_outputs=[rule])
    assert swapped_tie.ok, swapped_tie.messages
