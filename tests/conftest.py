"""Shared fixtures: where the real-data fixtures live, and markers that skip with a reason."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The real transcripts and published boards in ../shared/fixtures, read in place."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"real-data fixtures not found at {SHARED_FIXTURES} (they sit beside the checkout)")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright", reason="playwright is not installed (pip install -e '.[dev]')")
    return path
