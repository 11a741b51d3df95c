import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.eval.cases import build_cases, draw_properties, mix_seed, secret_seed
from kernelbench.problems.loader import load_problem_spec


@pytest.fixture
def spec(toy_problem):
    return load_problem_spec(toy_problem)


def test_every_shape_and_public_seed_then_stress_then_property(spec):
    cases = build_cases(spec, spec.smoke_shapes, secret=11, mode="smoke")
    base = [c for c in cases if c.label == "base"]
    assert len(base) == len(spec.smoke_shapes) * 3 and {c.public_seed for c in base} == {42, 123, 456}
    stress = [c for c in cases if c.label.startswith("stress:")]
    assert len(stress) == len(spec.stress) and {c.shape_index for c in stress} == {1}  # the smallest shape only
    assert len([c for c in cases if c.label.startswith("property:")]) == 2
    assert len({c.id for c in cases}) == len(cases)
    assert sum(c.oracle for c in cases) == len(spec.smoke_shapes)


def test_one_audited_base_call_per_shape_drawn_with_the_secret(spec):
    """The launch audit watches one base call per shape (which one is the secret's draw, so not always a model's
    first call) and every stress and property call; a repeat (the same inputs as a base call) is not audited."""
    draws = set()
    for secret in range(40):
        cases = build_cases(spec, spec.smoke_shapes, secret=secret, mode="smoke")
        for i in range(len(spec.smoke_shapes)):
            audited = [c.public_seed for c in cases if c.label == "base" and c.shape_index == i and c.audit]
            assert len(audited) == 1
            draws.add(audited[0])
        assert all(c.audit for c in cases if c.label != "base" and not c.repeat_of)
        assert not any(c.audit for c in cases if c.repeat_of)
    assert draws == {42, 123, 456}


def test_secret_changes_every_seed_and_is_reproducible(spec):
    a = build_cases(spec, spec.smoke_shapes, secret=1, mode="smoke")
    b = build_cases(spec, spec.smoke_shapes, secret=2, mode="smoke")
    assert a == build_cases(spec, spec.smoke_shapes, secret=1, mode="smoke")
    assert all(x.seed != y.seed for x, y in zip(a, b) if x.label == "base")
    assert all(c.seed != c.public_seed for c in a)
    assert mix_seed(42, 1) != mix_seed(42, 2) and 0 <= mix_seed(42, 1) < 2**31


def test_property_draws_are_bounded_and_deterministic(spec):
    draws = draw_properties(spec, n_shapes=2, secret=5, n=4)
    assert draws == draw_properties(spec, n_shapes=2, secret=5, n=4) and len(draws) == 4
    assert all(d[1] in {"heavy_tailed"} and d[2] in {1.0, 100.0} and 0 <= d[0] < 2 for d in draws)


def test_secret_from_env_and_file(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELBENCH_SECRET_SEED", "1234")
    assert secret_seed() == 1234
    monkeypatch.delenv("KERNELBENCH_SECRET_SEED")
    (tmp_path / "secret").write_text("99\n")
    monkeypatch.setenv("KERNELBENCH_SECRET_SEED_FILE", str(tmp_path / "secret"))
    assert secret_seed() == 99
    (tmp_path / "secret").write_text("nope")
    with pytest.raises(KernelBenchError, match="secret seed"):
        secret_seed()
    monkeypatch.delenv("KERNELBENCH_SECRET_SEED_FILE")
    assert secret_seed() != secret_seed()  # random per grading by default


def test_stress_and_property_cases_stay_on_the_smallest_shapes(spec):
    shapes = [{"M": 512, "N": 512, "K": 512}, {"M": 8, "N": 8, "K": 8}, {"M": 4096, "N": 4096, "K": 4096},
              {"M": 64, "N": 64, "K": 64}]
    cases = build_cases(spec, shapes, secret=3, mode="full")
    assert {c.shape_index for c in cases if c.label.startswith("stress:")} == {1}
    prop = [c for c in cases if c.label.startswith("property:")]
    assert len(prop) == 3 and {c.shape_index for c in prop} <= {1, 3}
    assert sum(c.label == "base" for c in cases) == 4 * 3  # every shape keeps every seed
