"""`kernelbench baselines`: the eager, torch.compile and SOTA lines of a problem, timed under the grader's own
protocol on this GPU, written to problems/<id>/baselines/<gpu>.json."""

from __future__ import annotations

import importlib.util
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from kernelbench.base.models import Grading
from kernelbench.errors import KernelBenchError
from kernelbench.eval.environment import collect_environment
from kernelbench.eval.grading import GradingOptions, GradingPlan, GradingState, run_stage, scratch_dir
from kernelbench.eval.protocol import BenchJob, BenchLine, JudgeReply, ShapeTiming
from kernelbench.eval.protocol import Line as LineName
from kernelbench.eval.roofline import geometric_mean
from kernelbench.eval.stages.correctness import reference_failed
from kernelbench.eval.stages.timing import shape_result
from kernelbench.fileio import atomic_write_text
from kernelbench.problems.baselines import COMPILED_LINE_MODE, Line, ProblemBaselines
from kernelbench.problems.baselines import ShapeTiming as LineShape
from kernelbench.problems.problem import Problem, as_problem


def _line_source(line: str, torch_version: str, sota_source: str) -> str:
    mode = "" if COMPILED_LINE_MODE == "default" else f"(mode={COMPILED_LINE_MODE!r})"
    compiled = f"torch {torch_version} torch.compile{mode}"
    return {"eager": f"torch {torch_version} eager", "compiled": compiled}.get(
        line, sota_source)


def _missing_requirements(requires: list[str]) -> list[str]:
    return [r for r in requires if importlib.util.find_spec(r.split("==")[0].replace("-", "_")) is None]


def line_from_timings(plan: GradingPlan, state: GradingState, timings: dict[int, ShapeTiming]) -> Line:
    """A line's shapes as the candidate's are published (kernelbench.eval.stages.timing.shape_result)."""
    shapes, errors = [], []
    for index, shape in enumerate(plan.shapes):
        timing = timings.get(index, ShapeTiming())
        result = shape_result(plan, state, index, shape, timing)
        if result.median_ms is None:
            errors.append(f"shape {index}: {(timing.error or timing.guard_error or 'no samples')[:500]}")
            continue
        shapes.append(LineShape(index=index, shape=shape, median_ms=result.median_ms, spread_ms=result.spread_ms,
                                samples_ms=result.samples_ms, timing_method=result.timing_method,
                                tflops=result.tflops, gbps=result.gbps, fraction=result.fraction))
    if errors:
        return Line(available=False, reason="; ".join(errors), shapes=shapes)
    return Line(shapes=shapes, peak_fraction=geometric_mean([s.fraction for s in shapes]))


def line_job(plan: GradingPlan, name: LineName, module: Path, expected_dir: Path) -> BenchJob:
    """The bench stage's job for one library line: the candidate's bench code, the reference's outputs as the
    expected values, the plain tolerance (the judge's checks are the candidate's)."""
    line = BenchLine(line=name, module=str(module))
    return plan.bench_job(plan.timing_cases(), lines=[line], line=name, module=line.module,
                          expected_dir=str(expected_dir), expected_prefix="expected")


def measure_lines(plan: GradingPlan, state: GradingState, lines: dict[LineName, Path],
                  expected_dir: Path) -> dict[LineName, Line]:
    """Each line timed in its own bench process under the bench limit: a slow line (a Python-loop eager
    reference, a library autotuning on its first calls) runs out of time alone instead of taking the lines
    measured beside it down with it."""
    from kernelbench.eval.protocol import BenchReply

    measured: dict[LineName, Line] = {}
    for name, module in lines.items():
        bench = run_stage(plan, state, line_job(plan, name, module, expected_dir))
        reply = bench.reply_as(BenchReply)
        timing = reply.lines.get(name) if reply is not None else None
        if reply is None:
            measured[name] = Line(available=False, reason=bench.error[:2000])
        elif timing is None:
            measured[name] = Line(available=False, reason="not timed")
        elif timing.error is not None:
            measured[name] = Line(available=False, reason=timing.error[:2000])
        else:
            measured[name] = line_from_timings(plan, state, timing.shapes)
    return measured


def measure_baselines(problem: Problem | Path, device: str = "cuda",
                      lines: tuple[LineName, ...] = ("eager", "compiled", "sota"),
                      shapes: str = "full", limits: dict[str, float] | None = None) -> ProblemBaselines:
    from kernelbench.eval.integrity.hooks import load_guards

    problem = as_problem(problem)
    options = GradingOptions(device=device, shapes=shapes, line="eager", lint=False, limits=dict(limits or {}))
    with tempfile.TemporaryDirectory(prefix="kb-baselines-", dir=scratch_dir()) as tmp:
        plan = GradingPlan.create(problem.reference_file, problem, Path(tmp), options, load_guards())
        state = GradingState(Grading(device=device, shapes_mode=shapes, has_solution=True))
        reference = run_stage(plan, state, plan.judge_job(plan.timing_cases(), save_expected=True))
        reply = reference.reply_as(JudgeReply)
        if reply is None:
            raise reference_failed(problem.reference_file, reference.error)
        state.note_device(reply.device_info, device)
        if state.profile is None and device == "cuda":
            raise KernelBenchError("this GPU matches no hardware profile", hint="see kernelbench/hardware.py")
        result = ProblemBaselines(problem=plan.spec.id, deck=problem.deck,
                                  gpu=state.profile.key if state.profile else device,
                                  gpu_name=state.device_info.name or "cpu", measured_at=datetime.now(UTC),
                                  problem_hash=problem.content_hash)
        result.lines = _measure_all(plan, state, lines, Path(tmp) / "judge", state.device_info.torch)
        env = collect_environment(device, state.profile, result.problem_hash, state.device_info)
        result.environment = {k: str(v) for k, v in env.model_dump().items() if v}
    return result


def _measure_all(plan: GradingPlan, state: GradingState, lines: tuple[LineName, ...], expected_dir: Path,
                 torch_version: str) -> dict[str, Line]:
    modules: dict[LineName, Path] = {}
    unavailable: dict[LineName, Line] = {}
    sources: dict[LineName, str] = {}
    for line in lines:
        if line != "sota":
            modules[line] = plan.problem.reference_in(plan.pristine)
            sources[line] = _line_source(line, torch_version, "")
            continue
        entry = plan.spec.sota[0] if plan.spec.sota else None
        if entry is None:
            unavailable[line] = Line(available=False, reason="the problem names no SOTA implementation")
            continue
        module = plan.pristine / entry.module
        missing = _missing_requirements(entry.requires)
        if missing or not module.is_file():
            unavailable[line] = Line(available=False, source=entry.source,
                                     reason=f"not available here: missing {', '.join(missing) or entry.module}")
        else:
            modules[line] = module
            sources[line] = f"{entry.name} ({entry.source})" if entry.source else entry.name
    measured = measure_lines(plan, state, modules, expected_dir) if modules else {}
    for line, value in measured.items():
        value.source = sources[line]
    return {line: measured.get(line) or unavailable[line] for line in lines}


def write_baselines(problem: Problem | Path, baselines: ProblemBaselines, merge: bool = False) -> Path:
    """Write the file; with `merge`, lines measured earlier (same problem hash) are kept unless measured again,
    and a line that could not be measured again (out of time, say) leaves the earlier measurement in place."""
    path = as_problem(problem).baselines_file(baselines.gpu)
    if merge and path.is_file():
        from kernelbench.problems.baselines import load_baselines

        earlier = load_baselines(path)
        if earlier.problem_hash == baselines.problem_hash:
            baselines.lines = merged_lines(earlier.lines, baselines.lines)
    atomic_write_text(path, baselines.model_dump_json(indent=2) + "\n")
    return path


def merged_lines(earlier: dict[str, Line], measured: dict[str, Line]) -> dict[str, Line]:
    """The earlier file's lines updated with the new measurements; an unavailable new line replaces only a line
    that was unavailable too (its reason is the latest), never a measured one."""
    lines = dict(earlier)
    for name, line in measured.items():
        if line.available or not (name in earlier and earlier[name].available):
            lines[name] = line
    return lines
