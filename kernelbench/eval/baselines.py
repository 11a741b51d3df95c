"""`kernelbench baselines`: the eager, torch.compile and SOTA lines of a problem, timed under the grader's own
protocol on this GPU, written to problems/<id>/baselines/<gpu>.json."""

from __future__ import annotations

import importlib.util
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.eval.environment import collect_environment
from kernelbench.eval.grade import STAGE_LIMITS_S, Grader, scratch_dir
from kernelbench.eval.roofline import geometric_mean
from kernelbench.fileio import atomic_write_text
from kernelbench.problems.baselines import (
    COMPILED_LINE_MODE,
    Line,
    ProblemBaselines,
    ShapeTiming,
    baselines_path,
)
from kernelbench.problems.loader import problem_hash


def _line_source(line: str, torch_version: str, sota_source: str) -> str:
    mode = "" if COMPILED_LINE_MODE == "default" else f"(mode={COMPILED_LINE_MODE!r})"
    compiled = f"torch {torch_version} torch.compile{mode}"
    return {"eager": f"torch {torch_version} eager", "compiled": compiled}.get(
        line, sota_source)


def _missing_requirements(requires: list[str]) -> list[str]:
    return [r for r in requires if importlib.util.find_spec(r.split("==")[0].replace("-", "_")) is None]


def line_from_raw(grader: Grader, raw_shapes: dict[str, Any]) -> Line:
    shapes, errors = [], []
    for index, shape in enumerate(grader.shapes):
        raw = raw_shapes.get(str(index), {})
        result = grader._shape_result(index, shape, raw)
        if result.median_ms is None:
            errors.append(f"shape {index}: {raw.get('error', 'no samples')[:500]}")
            continue
        shapes.append(ShapeTiming(index=index, shape=shape, median_ms=result.median_ms, spread_ms=result.spread_ms,
                                  samples_ms=result.samples_ms, timing_method=result.timing_method,
                                  tflops=result.tflops, gbps=result.gbps, fraction=result.fraction))
    if errors:
        return Line(available=False, reason="; ".join(errors), shapes=shapes)
    return Line(shapes=shapes, peak_fraction=geometric_mean([s.fraction for s in shapes]))


def measure_lines(grader: Grader, lines: dict[str, Path], expected_dir: Path) -> dict[str, Line]:
    """Each line timed in its own bench process under the bench limit: a slow line (a Python-loop eager
    reference, a library autotuning on its first calls) runs out of time alone instead of taking the lines
    measured beside it down with it."""
    measured = {}
    for name, module in lines.items():
        spec = {"line": name, "module": str(module)}
        bench = grader.stage("bench", grader.timing_cases(), lines=[spec], line=name, module=spec["module"],
                             expected_dir=str(expected_dir), expected_prefix="expected")
        raw = (bench.result or {}).get("lines", {}).get(name, {})
        if bench.result is None:
            measured[name] = Line(available=False, reason=bench.error[:2000])
        elif "error" in raw:
            measured[name] = Line(available=False, reason=raw["error"][:2000])
        else:
            measured[name] = line_from_raw(grader, raw.get("shapes", {}))
    return measured


def measure_baselines(problem_dir: Path, device: str = "cuda", lines: tuple[str, ...] = ("eager", "compiled", "sota"),
                      shapes: str = "full", limits: dict[str, float] | None = None) -> ProblemBaselines:
    problem_dir = Path(problem_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="kb-baselines-", dir=scratch_dir()) as tmp:
        grader = Grader(problem_dir / "reference.py", problem_dir, device, shapes, "eager",
                        {**STAGE_LIMITS_S, **(limits or {})}, False, Path(tmp))
        reference = grader.stage("judge", grader.timing_cases(), save_expected=True)
        if reference.result is None:
            raise KernelBenchError(f"the reference failed: {reference.error}", path=problem_dir / "reference.py")
        grader.note_device(reference.result)
        if grader.profile is None and device == "cuda":
            raise KernelBenchError("this GPU matches no hardware profile", hint="see kernelbench/hardware.py")
        expected_dir = Path(tmp) / "judge"
        result = ProblemBaselines(problem=grader.spec.id, gpu=grader.profile.key if grader.profile else device,
                                  gpu_name=grader.device_info.get("name", "cpu"),
                                  measured_at=datetime.now(UTC), problem_hash=problem_hash(problem_dir))
        result.lines = _measure_all(grader, lines, expected_dir, grader.device_info.get("torch", ""))
        env = collect_environment(device, grader.profile, result.problem_hash, grader.device_info)
        result.environment = {k: str(v) for k, v in env.model_dump().items() if v}
    return result


def _measure_all(grader: Grader, lines: tuple[str, ...], expected_dir: Path, torch_version: str) -> dict[str, Line]:
    modules, unavailable, sources = {}, {}, {}
    for line in lines:
        if line != "sota":
            modules[line] = grader.pristine / "reference.py"
            sources[line] = _line_source(line, torch_version, "")
            continue
        entry = grader.spec.sota[0] if grader.spec.sota else None
        module = grader.pristine / entry.module if entry else None
        missing = _missing_requirements(entry.requires) if entry else []
        if entry is None:
            unavailable[line] = Line(available=False, reason="the problem names no SOTA implementation")
        elif missing or not module.is_file():
            unavailable[line] = Line(available=False, source=entry.source,
                                     reason=f"not available here: missing {', '.join(missing) or entry.module}")
        else:
            modules[line] = module
            sources[line] = f"{entry.name} ({entry.source})" if entry.source else entry.name
    measured = measure_lines(grader, modules, expected_dir) if modules else {}
    for line, value in measured.items():
        value.source = sources[line]
    return {line: measured.get(line) or unavailable[line] for line in lines}


def write_baselines(problem_dir: Path, baselines: ProblemBaselines, merge: bool = False) -> Path:
    """Write the file; with `merge`, lines measured earlier (same problem hash) are kept unless re-measured."""
    path = baselines_path(problem_dir, baselines.gpu)
    if merge and path.is_file():
        from kernelbench.problems.baselines import load_baselines

        earlier = load_baselines(path)
        if earlier.problem_hash == baselines.problem_hash:
            baselines.lines = {**earlier.lines, **baselines.lines}
    atomic_write_text(path, baselines.model_dump_json(indent=2) + "\n")
    return path
