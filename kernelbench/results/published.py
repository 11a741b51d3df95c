"""The formats published by KernelBench-Hard (Infatoshi/KernelBench-Hard), read as they are.

- `leaderboard.json`: `{schema_version, hardware{name, sm, vram_gb, peak_bandwidth_gb_s}, problems[], models[{label,
  harness, model, effort, results{problem: {run_id, correct, has_solution, peak_fraction, elapsed_seconds,
  [annotation_verdict], [output_tokens]}}, pass_count, total_runs}], per_problem{...}}`. A cell is correct when
  `correct` is true (PASS, with or without a score); `has_solution` without `correct` is FAIL; neither is ERR.
- `problem_baselines.json`: `{_generated, _hardware, problems{id: {eager|compiled|sota|solution: {ms, tflops, gbps,
  n_shapes}}}}` — geometric means over shapes.
- `raw_baselines/<problem>.txt`: benchmark stdout, `shape=N variant=V tflops=.. gbps=.. ms=..` lines and
  `shape=N solution_peak_fraction=F` (the "solution" variant is the problem's template solution).
- `annotations/<run_id>.yaml`: close to our Annotation; `effort: ''` means none and a quote whose place was not
  found is written `lines: [0]` with a placeholder text.
Unknown extra keys are kept (extra="allow") so a later revision of the format still loads.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelbench.base.models import Ceiling
from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_json_model, read_text

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # run ids and problem ids become folder names


class Published(BaseModel):
    model_config = ConfigDict(extra="allow")


def _safe_keys(value: dict) -> dict:
    for key in value:
        if not SAFE_NAME.match(key):
            raise ValueError(f"problem id {key!r} is not a plain name (letters, digits, . _ -)")
    return value


class PublishedHardware(Published):
    name: str
    sm: str | None = None
    vram_gb: float | None = None
    peak_bandwidth_gb_s: float | None = None

    def ceiling(self, regime: str, dtype: str) -> Ceiling | None:
        """The ceiling the board divided a cell's speed by: its own bandwidth figure for a memory-bound problem;
        for a compute-bound one, the dense datasheet throughput of the GPU it names (the board states no
        throughput; kernelbench/hardware.py holds the same datasheet figures). None for a GPU or dtype unknown."""
        from kernelbench.hardware import match_profile, normalize_dtype

        profile = match_profile(self.name, None)
        if regime == "memory":
            value = self.peak_bandwidth_gb_s or (profile.dram_gbps if profile else None)
            source = ("the board's own peak_bandwidth_gb_s" if self.peak_bandwidth_gb_s
                      else f"{profile.name} datasheet" if profile else "")
            return Ceiling(regime="memory", dtype="dram", value=value, unit="GB/s", source=source) if value else None
        if profile is None:
            return None
        tflops = profile.peak_tflops.get(normalize_dtype(dtype))
        if not tflops:
            return None
        return Ceiling(regime="compute", dtype=normalize_dtype(dtype), value=tflops, unit="TFLOP/s",
                       source=f"{profile.name} datasheet, dense (the board names the GPU, not its throughput)")


class PublishedResult(Published):
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # becomes a folder name
    correct: bool = False
    has_solution: bool = False
    peak_fraction: float | None = None
    elapsed_seconds: float | None = None
    annotation_verdict: str | None = None
    output_tokens: int | None = None


class PublishedAgent(Published):
    label: str = ""
    harness: str
    model: str
    effort: str | None = None
    results: dict[str, PublishedResult] = Field(default_factory=dict)
    pass_count: int | None = None
    total_runs: int | None = None

    _problems_are_names = field_validator("results")(_safe_keys)


class PublishedBoard(Published):
    schema_version: int = 1
    hardware: PublishedHardware
    problems: list[str] = Field(default_factory=list)
    models: list[PublishedAgent]
    environment: str | None = None


class BaselineFigures(Published):
    ms: float
    tflops: float | None = None
    gbps: float | None = None
    n_shapes: int | None = None


class PublishedBaselines(Published):
    generated: str | None = Field(None, alias="_generated")
    hardware: str | None = Field(None, alias="_hardware")
    problems: dict[str, dict[str, BaselineFigures]] = Field(default_factory=dict)

    _problems_are_names = field_validator("problems")(_safe_keys)


def load_published_board(path: Path) -> PublishedBoard:
    return load_json_model(path, PublishedBoard)


def load_published_baselines(path: Path) -> PublishedBaselines:
    return load_json_model(path, PublishedBaselines)


# --------------------------------------------------------------------------------------------- raw baselines

_VARIANT = re.compile(r"^shape=(\d+)\s+variant=(\w+)\s+(.*)$")
_SOLUTION_FRACTION = re.compile(r"^shape=(\d+)\s+solution_peak_fraction=([-+0-9.eE]+)\s*$")
_FIELD = re.compile(r"(\w+)=([-+0-9.eE]+)")


class RawShape(BaseModel):
    """One variant's timing of one shape from raw benchmark output."""

    index: int
    variant: str
    ms: float
    tflops: float | None = None
    gbps: float | None = None


def parse_raw_baselines(path: Path) -> tuple[list[RawShape], dict[int, float]]:
    """Per-shape timings by variant, and the template solution's per-shape peak fraction."""
    shapes: list[RawShape] = []
    solution_fraction: dict[int, float] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if match := _VARIANT.match(line.strip()):
            fields = {k: float(v) for k, v in _FIELD.findall(match.group(3))}
            if "ms" not in fields:
                raise KernelBenchError("variant line without ms=", path=path, line=number,
                                       hint="each 'shape=N variant=V' line needs an ms= field")
            shapes.append(RawShape(index=int(match.group(1)), variant=match.group(2), ms=fields["ms"],
                                   tflops=fields.get("tflops"), gbps=fields.get("gbps")))
        elif match := _SOLUTION_FRACTION.match(line.strip()):
            solution_fraction[int(match.group(1))] = float(match.group(2))
    return shapes, solution_fraction
