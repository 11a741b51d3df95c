"""Which inputs a solution is checked on: every shape x public seed (each mixed with a secret seed), the
problem's numeric-stress cases, and property-based cases drawn by hypothesis from a seeded, bounded set.

The secret seed comes from KERNELBENCH_SECRET_SEED (an integer), or KERNELBENCH_SECRET_SEED_FILE (a file
outside the workspace holding one), or is drawn at random for every grading. The same secret gives the same
cases, so a grading can be reproduced by whoever holds it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kernelbench.errors import KernelBenchError
from kernelbench.problems.heldout import HeldOutSpec
from kernelbench.problems.spec import ProblemSpec, StressCase, Tolerance

SECRET_ENV = "KERNELBENCH_SECRET_SEED"
SECRET_FILE_ENV = "KERNELBENCH_SECRET_SEED_FILE"
PROPERTY_DRAWS = {"full": 3, "smoke": 2}   # hypothesis draws per grading (a cap: each one is a full case)
STRESS_SHAPES, PROPERTY_SHAPES = 1, 2       # how many of the smallest shapes carry stress / property cases
TIMED_STRESS_DRAWS = {"full": 1, "smoke": 4}  # input sets per timed shape and stress entry (timed_stress_cases)


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str                      # file-name safe
    shape_index: int
    shape: dict[str, Any]
    public_seed: int
    seed: int                    # the public seed mixed with the secret one
    case: str = "base"           # passed to get_inputs: base or a stress distribution
    scale: float = 1.0
    label: str = "base"          # base | stress:<name> | property:<distribution> | heldout:<shape|stress:..|property>
    oracle: bool = False         # compute an fp64 oracle for the error-size detector
    audit: bool = True           # run under the launch audit (see _audited_base_cases)
    held_out: bool = False       # a held-out case (heldout_cases): reported apart, never in the verdict
    generator: str = ""          # a held-out property's function in heldout.py, which draws its inputs
    repeat_of: str = ""          # a repeat case: the id of the case whose inputs it repeats (repeat_cases)
    exact_repeat: bool = False   # a repeat whose outputs must match the first call's bit for bit (deterministic)
    tolerance: dict[str, Tolerance] = {}  # the stress entry's own tolerance by dtype, over the problem's


def secret_seed() -> int:
    if os.environ.get(SECRET_ENV):
        try:
            return int(os.environ[SECRET_ENV])
        except ValueError:
            raise KernelBenchError(f"{SECRET_ENV} must be an integer") from None
    if os.environ.get(SECRET_FILE_ENV):
        path = Path(os.environ[SECRET_FILE_ENV])
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError) as exc:
            raise KernelBenchError(f"cannot read a secret seed: {exc}", path=path,
                                   hint="the file must hold one integer") from None
    return secrets.randbits(62)


def mix_seed(public: int, secret: int, *salt: Any) -> int:
    """A seed that neither the public seed nor the secret alone predicts; fits a torch.Generator."""
    text = "|".join(str(x) for x in (public, secret, *salt))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % (2**31 - 1)


def build_cases(spec: ProblemSpec, shapes: list[dict[str, Any]], secret: int, mode: str) -> list[Case]:
    cases = _base_cases(spec, shapes, secret) + _stress_cases(spec, shapes, secret)
    cases += _property_cases(spec, shapes, secret, PROPERTY_DRAWS.get(mode, 2))
    return cases + repeat_cases(spec, cases)


def repeat_cases(spec: ProblemSpec, cases: list[Case]) -> list[Case]:
    """Per shape, its first base case once more, after every other case: the same inputs, called again after the
    candidate has run the rest. The judge compares the two outputs bit for bit (worker/judge.py): a race or an
    out-of-bounds read shows as outputs that differ, and the repeat is itself judged against the reference, one
    more chance to catch an output that is only sometimes wrong. Not launch-audited (its first call was)."""
    firsts: dict[int, Case] = {}
    for case in cases:
        if case.label == "base":
            firsts.setdefault(case.shape_index, case)
    return [first.model_copy(update={"id": f"s{i}_repeat", "label": f"repeat:{first.id}", "audit": False,
                                     "oracle": False, "repeat_of": first.id, "exact_repeat": spec.deterministic})
            for i, first in sorted(firsts.items())]


def _base_cases(spec: ProblemSpec, shapes: list[dict], secret: int) -> list[Case]:
    cases = []
    for i, shape in enumerate(shapes):
        audited = _audited_seed(len(spec.seeds), secret, i)
        for j, public in enumerate(spec.seeds):
            cases.append(Case(id=f"s{i}_base_{public}", shape_index=i, shape=shape, public_seed=public,
                              seed=mix_seed(public, secret, i), oracle=(j == 0), audit=(j == audited)))
    return cases


def _audited_seed(n_seeds: int, secret: int, shape_index: int) -> int:
    """Which base case of a shape runs under the launch audit. Profiling a call costs ~0.1-0.2 ms per launched op
    (minutes per check stage for a Python-loop rewrite on full shapes if every call were audited), so each full
    shape audits one base call, drawn with the secret seed: a candidate honest only on some calls cannot know
    which one is watched. Stress and property cases (on the smallest shapes, cheap) are all audited."""
    return mix_seed(secret, secret, shape_index, "audit") % max(1, n_seeds)


def smallest_shape_indices(spec: ProblemSpec, shapes: list[dict], n: int) -> list[int]:
    """The n shapes that move the fewest bytes (ties: the earlier one). Stress and property cases run there
    only: the numerics they probe do not change with size, while a big shape costs gigabytes of inputs per
    case; the base cases still cover every shape with every seed."""
    def size(i: int) -> float:
        try:
            nbytes = spec.bytes_of(shapes[i])
        except Exception:  # a formula that cannot be evaluated on this shape: order by position
            return float(i)
        return float(i) if nbytes is None else nbytes  # no bytes formula: by position too
    return sorted(sorted(range(len(shapes)), key=lambda i: (size(i), i))[:n])


def stress_shape_indices(spec: ProblemSpec, shapes: list[dict], stress: StressCase) -> list[int]:
    """The graded shapes a stress entry is drawn on: its own `shapes` (those graded here), else the smallest."""
    if stress.shapes is not None:
        return sorted({i for i in stress.shapes if 0 <= i < len(shapes)})
    return smallest_shape_indices(spec, shapes, STRESS_SHAPES)


def _stress_fields(stress: StressCase) -> dict[str, Any]:
    """What a case drawn from a stress entry takes from it."""
    return dict(case="base" if stress.distribution == "normal" else stress.distribution, scale=stress.scale,
                label=stress.case_label, tolerance=dict(stress.tolerance))


def _stress_cases(spec: ProblemSpec, shapes: list[dict], secret: int) -> list[Case]:
    cases = []
    public = spec.seeds[0]
    for k, stress in enumerate(spec.stress):
        for i in stress_shape_indices(spec, shapes, stress):
            cases.append(Case(id=f"s{i}_stress{k}", shape_index=i, shape=shapes[i], public_seed=public,
                              seed=mix_seed(public, secret, i, stress.name), **_stress_fields(stress)))
    return sorted(cases, key=lambda c: c.shape_index)


def timed_stress_entries(spec: ProblemSpec) -> list[int]:
    """Which of the problem's stress entries the timed rotation mixes in: those with their own distribution (the
    inputs a problem builds to expose a shortcut, e.g. 04's absorb rows); a problem with scaled entries only gives
    all of them."""
    own = [k for k, s in enumerate(spec.stress) if s.distribution != "normal"]
    return own or list(range(len(spec.stress)))


def timed_stress_cases(spec: ProblemSpec, shapes: list[dict], secret: int, cases: list[Case],
                       mode: str = "full") -> list[Case]:
    """Stress cases with every timed shape's inputs, for the timed rotation (worker.bench_shape): per shape and
    stress entry, TIMED_STRESS_DRAWS[mode] input sets, the problem's own stress case first where the shape has one,
    new draws (secret seed, the entry's distribution and scale) for the rest. They are checked like every case
    before they are timed, so their checked outputs are what the timed outputs are judged against. Several draws
    on smoke shapes: a draw there is cheap, and whether one adversarial draw separates a shortcut is a matter of
    chance on tiny rows. The new ones are not launch-audited (full shapes; the base cases' draw covers them)."""
    public, draws = spec.seeds[0], TIMED_STRESS_DRAWS.get(mode, 1)
    by_id = {c.id: c for c in cases}
    found = []
    for i, shape in enumerate(shapes):
        for k in timed_stress_entries(spec):
            stress = spec.stress[k]
            if stress.shapes is not None and i not in stress.shapes:
                continue  # an entry bound to its shapes (another benchmark's property case) is timed there only
            own = [by_id[f"s{i}_stress{k}"]] if f"s{i}_stress{k}" in by_id else []
            found += own + [Case(
                id=f"s{i}_tstress{k}_{j}", shape_index=i, shape=shape, public_seed=public,
                seed=mix_seed(public, secret, i, stress.name, "timed", j), audit=False, **_stress_fields(stress))
                for j in range(draws - len(own))]
    return found


def _property_cases(spec: ProblemSpec, shapes: list[dict], secret: int, n: int) -> list[Case]:
    pool = smallest_shape_indices(spec, shapes, PROPERTY_SHAPES)
    draws = [(pool[i], dist, scale, seed) for i, dist, scale, seed in draw_properties(spec, len(pool), secret, n)]
    return [Case(id=f"s{i}_prop{k}", shape_index=i, shape=shapes[i], public_seed=-1,
                 seed=mix_seed(seed, secret, i, "property"), case=dist,
                 scale=scale, label=f"property:{dist}@{scale:g}")
            for k, (i, dist, scale, seed) in enumerate(draws)]


def draw_properties(spec: ProblemSpec, n_shapes: int, secret: int, n: int) -> list[tuple[int, str, float, int]]:
    """n (shape index, distribution, scale, seed) draws; hypothesis explores, the secret makes it repeatable."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis import strategies as st

    mixed = [s for s in spec.stress if not s.as_declared_only]
    distributions = sorted({s.distribution for s in mixed if s.distribution != "normal"}) or ["base"]
    distributions = ["base" if d == "normal" else d for d in distributions]
    scales = sorted({1.0, *(s.scale for s in mixed)})
    strategy = st.tuples(st.integers(0, n_shapes - 1), st.sampled_from(distributions), st.sampled_from(scales),
                         st.integers(0, 2**31 - 2))
    draws: list[tuple[int, str, float, int]] = []

    @fixed_seed(secret % (2**32))
    @settings(max_examples=max(n, 1) * 3, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(draw: tuple[int, str, float, int]) -> None:
        if len(draws) < n and draw not in draws:
            draws.append(draw)

    collect()
    return draws


def heldout_cases(spec: ProblemSpec, heldout: HeldOutSpec, mode: str, secret: int, first_index: int) -> list[Case]:
    """The problem's held-out cases (kernelbench.problems.heldout): per held-out shape one base input set and one
    per stress entry of the problem (a random draw rarely puts a winner in the one column past a tile; the
    problem's own adversarial distributions do), and `draws` per property, every seed mixed with the secret one.
    Their shape indices follow the published shapes' (`first_index` on), so each model is built with weights of
    its own. A case's `seed` replays it alone: reference.get_inputs (with the case's distribution and scale) or
    heldout.py's function called with it draws the same inputs."""
    public = spec.seeds[0]
    shapes = heldout.shapes_for(mode)
    cases = []
    for j, shape in enumerate(shapes):
        base = Case(id=f"h{j}_base", shape_index=first_index + j, shape=shape, public_seed=public,
                    seed=mix_seed(public, secret, "heldout", j), label="heldout:shape", audit=False, held_out=True)
        cases.append(base)
        cases += [base.model_copy(update={
            "id": f"h{j}_stress{k}", "seed": mix_seed(public, secret, "heldout", j, stress.name),
            **_stress_fields(stress), "label": f"heldout:{stress.case_label}"})
            for k, stress in enumerate(spec.stress) if stress.shapes is None]  # bound ones: their shapes only
    first_property = first_index + len(shapes)
    for k, prop in enumerate(heldout.properties):
        cases += [Case(id=f"h{first_property + k}_{prop.name}_{d}", shape_index=first_property + k,
                       shape=heldout.property_shape(prop, mode), public_seed=public,
                       seed=mix_seed(public, secret, "heldout", prop.name, d), label=f"heldout:{prop.name}",
                       audit=False, held_out=True, generator=prop.name) for d in range(prop.draws)]
    return cases
