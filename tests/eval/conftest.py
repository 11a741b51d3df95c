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
