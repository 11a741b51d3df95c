"""Helpers for the transcript tests: where each fixture folder is, and an independent reader of JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tx(shared_fixtures: Path) -> Path:
    """The real transcript fixtures folder."""
    return shared_fixtures / "transcripts"


def json_lines(path: Path) -> list[dict]:
    """A deliberately simple reader (stdlib json), independent of the parsers under test."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
