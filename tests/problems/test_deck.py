"""Every problem of the deck: its spec loads, its reference runs on the CPU, its inputs are seeded, its stress
cases are valid, and both honest solutions (eager PyTorch, Triton under TRITON_INTERPRET=1) match it."""

from __future__ import annotations

import pytest
import torch

from kernelbench.eval.worker.comparison import Comparer
from kernelbench.problems.loader import load_problem_spec
from tests.problems.conftest import PROBLEM_IDS, PROBLEMS, SOLUTIONS, load_reference, load_solution

EXPECTED = 9


def test_the_deck_has_nine_problems_with_all_their_files():
    assert len(PROBLEM_IDS) == EXPECTED, PROBLEM_IDS
    for pid in PROBLEM_IDS:
        for name in ("problem.yaml", "reference.py", "PROMPT.txt", "README.md"):
            assert (PROBLEMS / pid / name).is_file(), f"{pid} lacks {name}"
        for kind in ("eager", "triton"):
            assert (SOLUTIONS / kind / f"{pid}.py").is_file(), f"{pid} lacks its {kind} solution"


def as_tuple(out):
    return (out,) if isinstance(out, torch.Tensor) else tuple(out)


def build(reference, shape, seed=0):
    torch.manual_seed(seed)
    return reference.Model(**reference.get_init_kwargs(shape))


def cases(spec):
    """(case, scale) pairs: the base case, then every stress entry."""
    out = [("base", 1.0)]
    for stress in spec.stress:
        out.append((stress.distribution if stress.distribution != "normal" else "base", stress.scale))
    return out


def size(shape: dict) -> float:
    """Stress cases run on the smallest smoke shape: Triton's interpreter pays per operation."""
    total = 1.0
    for value in shape.values():
        total *= value
    return total


def mismatches(reference, spec, got, want, inputs) -> list[str]:
    """The grader's own judgment of one output (its Comparer: the spec's tolerances with row_rtol, the index rules,
    then the problem's compare() hook), so the deck's tests and benchmarks/gpu_heldout_validate.py judge as a
    grading does."""
    tolerance = {name: tol.model_dump() for name, tol in spec.tolerance.items()}
    comparer = Comparer(torch, reference, str(as_tuple(want)[0].device), None, tolerance, list(spec.index_outputs))
    result, _ = comparer.judge("deck", got, want, list(inputs), None, [])
    return list(result.messages)


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_spec_loads_with_shapes_formulas_and_tolerances(pid):
    spec = load_problem_spec(PROBLEMS / pid)
    assert 3 <= len(spec.shapes) <= 5 and spec.smoke_shapes
    assert spec.tolerance and spec.forbidden and spec.stress
    for shape in spec.shapes + spec.smoke_shapes:
        assert spec.flops_of(shape) > 0 and spec.bytes_of(shape) > 0
    if spec.sota:
        assert all((PROBLEMS / pid / entry.module).is_file() for entry in spec.sota)


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_reference_runs_on_smoke_shapes_and_is_seeded(pid):
    spec = load_problem_spec(PROBLEMS / pid)
    reference = load_reference(pid)
    for shape in spec.smoke_shapes:
        a = reference.get_inputs(shape, 42, "cpu")
        b = reference.get_inputs(shape, 42, "cpu")
        c = reference.get_inputs(shape, 123, "cpu")
        assert all(torch.equal(x, y) for x, y in zip(a, b) if isinstance(x, torch.Tensor))
        assert any(not torch.equal(x, y) for x, y in zip(a, c) if isinstance(x, torch.Tensor) and x.is_floating_point()
                   or isinstance(x, torch.Tensor) and x.dtype == torch.float8_e4m3fn)
        out = as_tuple(build(reference, shape)(*a))
        again = as_tuple(build(reference, shape)(*b))
        other = as_tuple(build(reference, shape)(*c))
        assert all(torch.equal(x.float(), y.float()) for x, y in zip(out, again))
        assert any(not torch.equal(x.float(), y.float()) for x, y in zip(out, other))
        for t in out:
            if t.is_floating_point():
                assert torch.isfinite(t.float()).all()
                assert t.float().abs().max() > 0, "a reference output is all zeros"


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_every_stress_case_produces_valid_inputs(pid):
    spec = load_problem_spec(PROBLEMS / pid)
    reference = load_reference(pid)
    shape = spec.smoke_shapes[0]
    base = reference.get_inputs(shape, 42, "cpu")
    for case, scale in cases(spec)[1:]:
        inputs = reference.get_inputs(shape, 42, "cpu", case, scale)
        assert len(inputs) == len(base)
        for x, y in zip(inputs, base):
            if isinstance(x, torch.Tensor):
                # sizes may differ (a paged KV pool grows with the longest sequence); kinds may not
                assert x.dim() == y.dim() and x.dtype == y.dtype, f"{case}: {x.dtype}{tuple(x.shape)}"
                if x.is_floating_point():
                    assert torch.isfinite(x.float()).all(), case
        out = as_tuple(build(reference, shape)(*inputs))
        assert all(torch.isfinite(t.float()).all() for t in out if t.is_floating_point()), case
    with pytest.raises(ValueError):
        reference.get_inputs(shape, 42, "cpu", "no_such_case")


@pytest.mark.parametrize("kind", ["eager", "triton"])
@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_honest_solution_matches_the_reference(pid, kind):
    spec = load_problem_spec(PROBLEMS / pid)
    reference = load_reference(pid)
    solution = load_solution(kind, pid)
    smallest = min(range(len(spec.smoke_shapes)), key=lambda j: size(spec.smoke_shapes[j]))
    for i, shape in enumerate(spec.smoke_shapes):
        for case, scale in cases(spec) if i == smallest else cases(spec)[:1]:
            inputs = reference.get_inputs(shape, 42, "cpu", case, scale)
            ref_model = build(reference, shape)
            candidate = solution.Model(**reference.get_init_kwargs(shape))
            candidate.load_state_dict(ref_model.state_dict(), strict=True)
            got = candidate(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            want = ref_model(*inputs)
            assert mismatches(reference, spec, got, want, inputs) == [], (shape, case, scale)


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_oracle_is_float64_and_close_to_the_reference(pid):
    """The error-size detector needs a real fp64 result: .double() does not give one when the reference casts."""
    reference = load_reference(pid)
    if not hasattr(reference, "oracle"):
        pytest.skip("integer-valued outputs: no oracle needed")
    spec = load_problem_spec(PROBLEMS / pid)
    shape = spec.smoke_shapes[0]
    model = build(reference, shape)
    inputs = reference.get_inputs(shape, 42, "cpu")
    for out, exact in zip(as_tuple(model(*inputs)), as_tuple(reference.oracle(model, *inputs)), strict=True):
        assert exact.dtype == torch.float64 and exact.shape == out.shape
        rms = (out.double() - exact).pow(2).mean().sqrt() / exact.pow(2).mean().sqrt().clamp(min=1e-300)
        assert rms < 0.05, float(rms)


def test_paged_attention_pool_is_sized_by_the_tokens_held():
    """The ragged stress case puts half the tokens in one sequence; the pool must not grow to batch × longest."""
    import importlib.util

    path = PROBLEMS / "03_paged_attention" / "reference.py"
    spec = importlib.util.spec_from_file_location("paged_reference", path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    shape = {"batch": 16, "num_heads": 8, "num_kv_heads": 2, "head_dim": 16, "page_size": 16, "seq_len": 256}
    q, k_cache, v_cache, block_table, seq_lens = reference.get_inputs(shape, 3, "cpu", case="ragged")
    needed = [(int(n) + 15) // 16 for n in seq_lens]
    assert k_cache.shape[0] == sum(needed) + 7
    used = [p for b, n in enumerate(needed) for p in block_table[b, :n].tolist()]
    assert len(used) == len(set(used)) and 0 <= min(used) and max(used) < k_cache.shape[0]
    assert int(block_table.max()) < k_cache.shape[0]  # padding entries are valid page numbers too
