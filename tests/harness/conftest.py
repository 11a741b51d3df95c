"""Fixtures for the harness tests: stand-in CLIs, agent contexts, the deck's problems, one Ray instance."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from kernelbench.harness.agents import AgentContext
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.problems.problem import open_problem
from harness_standins import StandIns

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
SWEEP_PROBLEMS = ("04_kahan_softmax", "05_topk_bitonic")


def _bwrap_works() -> str | None:
    from kernelbench.errors import KernelBenchError
    from kernelbench.harness import sandbox

    try:
        sandbox.probe()
    except KernelBenchError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def sandbox_ok() -> None:
    problem = _bwrap_works()
    if problem:
        pytest.skip(f"bubblewrap cannot run here: {problem}")


@pytest.fixture(scope="session")
def sandbox_setting() -> str:
    """`true` where bubblewrap works, else `false`: runs and sweeps are tested either way (the sandbox has its
    own tests, which skip where it cannot run)."""
    return "false" if _bwrap_works() else "true"


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandIns:
    stand = StandIns(tmp_path / "standins")
    monkeypatch.setenv("PATH", f"{stand.bin}:/usr/bin:/bin")
    return stand


@pytest.fixture
def make_ctx(tmp_path: Path):
    """An AgentContext over fresh workspace, home and run folders."""

    def make(agent: str, budget_s: float = 60.0, options: dict | None = None) -> AgentContext:
        base = tmp_path / "session"
        for name in ("workspace", "home", "run"):
            (base / name).mkdir(parents=True, exist_ok=True)
        return AgentContext(spec=AgentSpec.parse(agent), prompt="Write solution.py: a fast {kernel} — verbatim.",
                            workspace=base / "workspace", home=base / "home", run_dir=base / "run",
                            problem=open_problem(PROBLEMS / "04_kahan_softmax"),
                            budget_s=budget_s, run_id="test_run", options=options or {})

    return make


@pytest.fixture(scope="session")
def deck() -> Path:
    missing = [p for p in SWEEP_PROBLEMS if not (PROBLEMS / p / "problem.yaml").is_file()
               or not (REPO / "solutions" / "eager" / f"{p}.py").is_file()]
    if missing:
        pytest.skip(f"the deck does not have {missing} with eager solutions yet")
    return PROBLEMS


@pytest.fixture(scope="session")
def pipeline(deck: Path) -> Path:
    """The full run pipeline: needs the evaluation stage's workspace files and grader."""
    if importlib.util.find_spec("kernelbench.eval.agent_files") is None:
        pytest.skip("kernelbench.eval.agent_files (the workspace's check.py/benchmark.py) is not available yet")
    from kernelbench.eval import grade

    if not hasattr(grade, "grade_solution"):
        pytest.skip("kernelbench.eval.grade.grade_solution is not available yet")
    return deck


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root of its own (sweeps/plans/ with the test plans) whose problems are the real deck's."""
    root = tmp_path / "project"
    plans = root / "sweeps" / "plans"
    plans.mkdir(parents=True)
    for plan in (Path(__file__).parent / "plans").glob("*.yaml"):
        shutil.copyfile(plan, plans / plan.name)
    return root


@pytest.fixture(scope="session")
def ray_local():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
    for attempt in range(3):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
            break
        except Exception:  # the raylet has a fixed 30 s to register; a busy machine can miss it once
            ray.shutdown()
            if attempt == 2:
                raise
    yield ray
    ray.shutdown()
