"""Fixtures writing small hand-written data directories for the results tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from results_builders import SOLUTION, result


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Write runs/<run_id>/result.json (+ solution.py unless imported) under tmp_path; returns the run dir."""

    def make(run_id: str = "20260101_000000_claude_opus_01_demo", *, files: dict[str, str] | None = None,
             **kwargs) -> Path:
        run = result(run_id, **kwargs)
        folder = tmp_path / "runs" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "result.json").write_text(run.dump_json(), encoding="utf-8")
        if files is None:
            files = {} if run.source.startswith("import:") else {"solution.py": SOLUTION}
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        return folder

    return make


@pytest.fixture
def write_annotation(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(name: str, text: str) -> Path:
        path = tmp_path / "annotations" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write
