"""Shared bits for the grader's tests: the toy problem folder and its solutions."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def toy_problem() -> Path:
    return HERE / "problems" / "00_toy_gemm"


@pytest.fixture(scope="session")
def toy_solutions() -> Path:
    return HERE / "solutions"


def bench_context(tmp_path: Path, problem: Path, *, rotation_seed: int | None = 1, trials: int = 30,
                  candidate=None, **job):
    """A bench stage's context as the worker builds it, for a problem folder, without a process."""
    import torch

    from kernelbench.eval.protocol import BenchJob, TimingSettings
    from kernelbench.eval.worker.context import StageContext
    from kernelbench.problems.loader import load_module
    from kernelbench.problems.loader import load_problem_spec

    spec = load_problem_spec(problem)
    fields = dict(problem_dir=str(problem), module=str(tmp_path / "solution.py"), device="cpu", cases=[],
                  out_dir=str(tmp_path / "bench"), inputs_dir=str(tmp_path / "inputs"), model_seeds={0: 1, 1: 2},
                  tolerance=spec.tolerance, expected_dir=str(tmp_path / "check"), expected_prefix="out",
                  rotation_seed=rotation_seed,
                  timing=TimingSettings(warmup=1, trials=trials, max_trials=trials, stderr_target=0.0,
                                        cuda_graph_below_ms=0.05, input_sets=4))
    bench = BenchJob(**{**fields, **job})
    reference = load_module(problem / "reference.py", "reference")
    return StageContext(job=bench, torch=torch, device=torch.device("cpu"), reference=reference, line="candidate",
                        candidate=candidate if candidate is not None else object())


def minimal_job(role: str, tmp_path: Path, **extra):
    """A valid job of `role` with no cases (for tests of a stage's preparation)."""
    from kernelbench.eval.protocol import BenchJob, CheckJob, FreshJob, JudgeJob, TimingSettings

    fields = dict(problem_dir=str(tmp_path), module=str(tmp_path / "solution.py"), device="cpu", cases=[],
                  out_dir=str(tmp_path), inputs_dir=str(tmp_path / "inputs"), model_seeds={}, tolerance={},
                  timing=TimingSettings(warmup=1, trials=3, max_trials=3, stderr_target=0.0, cuda_graph_below_ms=0.05,
                                        input_sets=1))
    roles = {"judge": (JudgeJob, {}), "check": (CheckJob, {}), "fresh": (FreshJob, {"bench_dir": str(tmp_path),
                                                                                       "fresh": []}),
             "bench": (BenchJob, {"expected_dir": str(tmp_path), "expected_prefix": "out"})}
    kind, needed = roles[role]
    return kind(**{**fields, **needed, **extra})
