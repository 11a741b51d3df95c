"""Shared fixtures: where the real-data fixtures live, and markers that skip with a reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Without a GPU, Triton kernels can only run in its interpreter. Triton decides per kernel at decoration time,
# so the switch must be on before any test module imports a kernel, whatever order the tests run in.
if not Path("/dev/nvidiactl").exists():
    os.environ.setdefault("TRITON_INTERPRET", "1")

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]

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


@pytest.fixture(scope="session")
def browser(chromium_path: str):
    """One headless Chromium for the whole run: Playwright's sync API allows one instance per thread at a time."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium_path, args=BROWSER_ARGS)
        yield instance
        instance.close()
