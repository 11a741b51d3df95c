"""The package type-checks: mypy, as pyproject.toml configures it ([tool.mypy]), finds no error in kernelbench/."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/unit/ is two folders down)


@pytest.mark.slow
def test_mypy_finds_no_error():
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[dev]'")
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, f"mypy exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
