"""`problems/<id>/baselines/<gpu>.json`: eager, torch.compile and SOTA lines measured on one GPU.

Written by `kernelbench baselines`; read by the grader (for speed-ups) and by the site (ceilings, fast_p).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.base.decks import MAIN_DECK
from kernelbench.base.numbers import Fraction, Index, NonNegative, ShapeValue, Version

BASELINES_VERSION = 1
LINES = ("eager", "compiled", "sota")
# torch.compile's default mode: "reduce-overhead" was tried on the H100 (benchmarks/results/h100_line_timers.md) and
# is no better a line under fresh inputs: its CUDA graphs copy every new input into their static buffers, 18%
# slower on 04's largest shape, and some small shapes stayed host-bound
COMPILED_LINE_MODE = "default"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShapeTiming(Model):
    index: Index
    shape: dict[str, ShapeValue]
    median_ms: NonNegative
    spread_ms: NonNegative | None = None
    samples_ms: list[NonNegative] = Field(default_factory=list)
    timing_method: str = ""
    tflops: NonNegative | None = None
    gbps: NonNegative | None = None
    fraction: Fraction | None = None


class Line(Model):
    """One baseline implementation timed under the grader's protocol."""

    available: bool = True
    reason: str = ""                      # why it is not available (missing library, compile failure, ...)
    source: str = ""                      # e.g. "torch 2.11.0 eager", "flash-linear-attention 0.3.1"
    shapes: list[ShapeTiming] = Field(default_factory=list)
    peak_fraction: Fraction | None = None  # geometric mean over shapes, same formula as candidates

    def median_ms_by_shape(self) -> dict[int, float]:
        return {s.index: s.median_ms for s in self.shapes}


class ProblemBaselines(Model):
    version: Version = BASELINES_VERSION
    problem: str
    deck: str = MAIN_DECK                 # the problem's deck (kernelbench.base.decks): the lines of (deck, problem)
    gpu: str                              # hardware profile key
    gpu_name: str = ""
    measured_at: datetime | None = None
    problem_hash: str = ""
    environment: dict[str, str] = Field(default_factory=dict)
    lines: dict[str, Line] = Field(default_factory=dict)  # keys from LINES


class BaselineNotes(Model):
    """`problems/<id>/baselines/notes.yaml`: why a line is what it is (the library chosen, a line not measured).

    Kept beside the measurements and out of the problem's hash: a note explains a line, it never changes one.
    """

    eager: str = ""
    compiled: str = ""
    sota: str = ""

    def by_line(self) -> dict[str, str]:
        return {line: text for line in LINES if (text := getattr(self, line).strip())}


NOTES_FILE = "notes.yaml"


def baselines_path(problem_dir: Path, gpu: str) -> Path:
    return Path(problem_dir) / "baselines" / f"{gpu}.json"


def load_baselines(path: Path) -> ProblemBaselines:
    from kernelbench.fileio import load_json_model

    return load_json_model(path, ProblemBaselines)
