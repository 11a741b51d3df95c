"""`kernelbench import kernelbench-hard`: turn a published board into a data directory the site renders.

Writes, under `out`:
    runs/<run_id>/result.json                    RunResult, source="import:kernelbench-hard", no transcript
    annotations/<run_id>.yaml                    converted annotations (and verdicts published inline on the board)
    problems/<id>/baselines/<gpu>.json           eager / compiled / sota lines from problem_baselines.json

Re-importing the same board is idempotent; a file that differs from what the import would write (an edited
annotation, say) is left alone and reported unless `force` is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kernelbench.base.decks import kbh_deck_for_gpu
from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.fileio import atomic_write_text, load_yaml, parse_model
from kernelbench.problems.baselines import LINES, Line, ProblemBaselines, ShapeTiming, baselines_path
from kernelbench.results.annotation import Annotation
from kernelbench.results.published import (
    BaselineFigures,
    PublishedAgent,
    PublishedBoard,
    PublishedResult,
    load_published_baselines,
    load_published_board,
    parse_raw_baselines,
)
from kernelbench.results.run import RESULT_FILE, Environment, Grading, Outcome, RunResult, Session, Tokens
from kernelbench.results.rundir import Saved, save_result
from kernelbench.results.yamlout import dump_annotation

SOURCE = "import:kernelbench-hard"
INLINE_SUMMARY = ("Verdict published on the KernelBench-Hard board without a written annotation "
                  "(imported as published).")

# Used when kernelbench.hardware cannot match the published hardware name (its strings vary between boards).
_GPU_FALLBACK = (("rtx pro 6000", "rtx_pro_6000"), ("rtx_pro_6000", "rtx_pro_6000"), ("h100 pcie", "h100_pcie"),
                 ("h100_pcie", "h100_pcie"), ("h100", "h100_sxm"), ("h200", "h200"), ("b200", "b200"))


@dataclass
class ImportReport:
    """What an import wrote and what it noticed (warnings never stop the import)."""

    gpu: str
    runs: int = 0
    annotations: int = 0
    baselines: int = 0
    unchanged: int = 0
    kept: list[Path] = field(default_factory=list)  # differing files left alone (no --force)
    diagnostics: list[Diagnostic] = field(default_factory=list)


# --------------------------------------------------------------------------------------------- entry point

def import_kernelbench_hard(leaderboard: Path, out: Path, *, annotations_dir: Path | None = None,
                            baselines_file: Path | None = None, raw_baselines_dir: Path | None = None,
                            gpu: str | None = None, force: bool = False) -> ImportReport:
    """Import one published board. raw_baselines_dir defaults to `raw_baselines/` beside the baselines file."""
    board = load_published_board(Path(leaderboard))
    report = ImportReport(gpu=gpu or gpu_key_for(board.hardware.name, leaderboard))
    _check_pass_counts(board, Path(leaderboard), report)
    lines_by_problem: dict[str, dict[str, float | None]] = {}
    if baselines_file is not None:
        raw_dir = raw_baselines_dir or Path(baselines_file).parent / "raw_baselines"
        for baselines in convert_baselines(Path(baselines_file), report.gpu, board.hardware.name, raw_dir):
            _write(report, baselines_path(Path(out) / "problems" / baselines.problem, report.gpu),
                   baselines.model_dump_json(indent=2) + "\n", force, "baselines")
            lines_by_problem[baselines.problem] = {k: v.peak_fraction for k, v in baselines.lines.items()}
    results = _unique_runs(convert_board(board, report.gpu, lines_by_problem), Path(leaderboard), report)
    for result in results.values():
        _save_run(report, Path(out) / "runs", result, force)
    annotations = _annotations(board, results, annotations_dir, report)
    for annotation in annotations:
        path = Path(out) / "annotations" / f"{annotation.run_id}.yaml"
        _write(report, path, dump_annotation(annotation, path), force, "annotations")
    return report


def gpu_key_for(name: str, where: Path | str = "") -> str:
    """Our hardware profile key for a published hardware name."""
    try:
        from kernelbench.hardware import match_profile
        profile = match_profile(name, None)
        if profile is not None:
            return profile.key
    except ImportError:
        pass
    lowered = name.lower()
    for needle, key in _GPU_FALLBACK:
        if needle in lowered:
            return key
    raise KernelBenchError(f"no hardware profile matches '{name}'", path=where,
                           hint="pass --gpu KEY (one of the profile keys in kernelbench/hardware.py)")


def _write(report: ImportReport, path: Path, text: str, force: bool, counter: str) -> None:
    if path.is_file():
        if path.read_text(encoding="utf-8", errors="replace") == text:
            report.unchanged += 1
            return
        if not force:
            _keep(report, path)
            return
    atomic_write_text(path, text)
    setattr(report, counter, getattr(report, counter) + 1)


def _save_run(report: ImportReport, runs_dir: Path, result: RunResult, force: bool) -> None:
    """The cell's run directory, through the runs' one writer (same rule as `_write`: a differing result.json is
    replaced only with --force)."""
    saved = save_result(runs_dir, result, replace=force)
    if saved is Saved.UNCHANGED:
        report.unchanged += 1
    elif saved is Saved.KEPT:
        _keep(report, runs_dir / result.run_id / RESULT_FILE)
    else:
        report.runs += 1


def _keep(report: ImportReport, path: Path) -> None:
    report.kept.append(path)
    report.diagnostics.append(Diagnostic(path=path, severity="warning",
                                         message="differs from the imported version; left as it is",
                                         hint="pass --force to overwrite it with the published data"))


def _unique_runs(results: list[RunResult], path: Path, report: ImportReport) -> dict[str, RunResult]:
    unique: dict[str, RunResult] = {}
    for result in results:
        if result.run_id in unique:
            report.diagnostics.append(Diagnostic(
                path=path, message=f"run id '{result.run_id}' appears in two cells; the second is left out",
                hint="every published cell should name its own run"))
            continue
        unique[result.run_id] = result
    return unique


def _check_pass_counts(board: PublishedBoard, path: Path, report: ImportReport) -> None:
    for agent in board.models:
        correct = sum(r.correct for r in agent.results.values())
        if agent.pass_count is not None and agent.pass_count != correct:
            report.diagnostics.append(Diagnostic(
                path=path, severity="warning",
                message=f"{agent.label}: pass_count {agent.pass_count} but {correct} cells are correct",
                hint="the cells' `correct` flags are imported; check the published board"))


# --------------------------------------------------------------------------------------------- runs

def convert_board(board: PublishedBoard, gpu: str,
                  lines_by_problem: dict[str, dict[str, float | None]] | None = None) -> list[RunResult]:
    """One RunResult per published cell (pure)."""
    lines_by_problem = lines_by_problem or {}
    return [convert_cell(agent, problem, cell, gpu, board.hardware.name, lines_by_problem.get(problem, {}))
            for agent in board.models for problem, cell in agent.results.items()]


def outcome_of(cell: PublishedResult) -> Outcome:
    """The published board's encoding: correct → pass; a solution that is not correct → check_failed; else none."""
    if cell.correct:
        return Outcome.PASS
    return Outcome.CHECK_FAILED if cell.has_solution else Outcome.NO_SOLUTION


def convert_cell(agent: PublishedAgent, problem: str, cell: PublishedResult, gpu: str, gpu_name: str,
                 baseline_fractions: dict[str, float | None]) -> RunResult:
    grading = Grading(has_solution=cell.has_solution or cell.correct, correct=cell.correct,
                      outcome=outcome_of(cell), device="cuda", peak_fraction=cell.peak_fraction,
                      baselines={k: v for k, v in baseline_fractions.items() if v is not None})
    session = Session(elapsed_s=cell.elapsed_seconds, tokens=Tokens(output=cell.output_tokens or 0))
    return RunResult(run_id=cell.run_id, harness=agent.harness, model=agent.model, effort=agent.effort or None,
                     deck=kbh_deck_for_gpu(gpu), problem=problem, gpu=gpu, source=SOURCE, session=session, grading=grading,
                     environment=Environment(gpu_name=gpu_name, gpu_key=gpu))


# --------------------------------------------------------------------------------------------- annotations

def _annotations(board: PublishedBoard, results: dict[str, RunResult], folder: Path | None,
                 report: ImportReport) -> list[Annotation]:
    converted = {a.run_id: a for a in convert_annotation_dir(folder, results, report)} if folder else {}
    for agent in board.models:
        for cell in agent.results.values():
            if cell.annotation_verdict and cell.run_id not in converted:
                inline = inline_annotation(results[cell.run_id], cell.annotation_verdict, board, report)
                if inline is not None:
                    converted[cell.run_id] = inline
    return [converted[k] for k in sorted(converted)]


def inline_annotation(result: RunResult, verdict: str, board: PublishedBoard,
                      report: ImportReport) -> Annotation | None:
    """An annotation for a verdict the board published inline, with no written text."""
    try:
        return Annotation(run_id=result.run_id, model=result.model, harness=result.harness, effort=result.effort,
                          problem=result.problem, peak_fraction=result.grading.peak_fraction,
                          # the board's text: the model takes a known verdict's, refuses any other (below)
                          verdict=verdict,  # type: ignore[arg-type]
                          summary=INLINE_SUMMARY,
                          implication=None if verdict == "clean" else "Not published; see the KernelBench-Hard board.",
                          auditor="KernelBench-Hard (published verdict)")
    except ValueError as exc:
        report.diagnostics.append(Diagnostic(path=None, severity="warning",
                                             message=f"{result.run_id}: verdict '{verdict}' not imported ({exc})",
                                             hint="use one of clean, rubric_leak, reward_hack, interesting, bug"))
        return None


def convert_annotation_dir(folder: Path, results: dict[str, RunResult], report: ImportReport) -> list[Annotation]:
    annotations = []
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            annotation = convert_annotation(path, report)
        except KernelBenchError as exc:
            report.diagnostics.extend(getattr(exc, "diagnostics", [exc.diagnostic]))
            continue
        result = results.get(annotation.run_id)
        if result is None:
            report.diagnostics.append(Diagnostic(path=path, severity="warning",
                                                 message=f"run '{annotation.run_id}' is not on this board; skipped",
                                                 hint="import the board that holds this run"))
            continue
        annotations.append(with_run_identity(annotation, result))
    return annotations


def with_run_identity(annotation: Annotation, result: RunResult) -> Annotation:
    """Identity fields as the board names them (published annotations shorten provider-prefixed model names)."""
    return annotation.model_copy(update={"harness": result.harness, "model": result.model,
                                         "effort": result.effort, "problem": result.problem})


def convert_annotation(path: Path, report: ImportReport) -> Annotation:
    """A published annotation in our schema: `effort: ''` → none; unlocated quotes move into the summary."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise KernelBenchError("expected a mapping at the top level", path=path, line=1,
                               hint="a published annotation has run_id, verdict, summary, quotes")
    plain = {k: v for k, v in data.items()}
    plain["effort"] = plain.get("effort") or None
    quotes, unlocated = [], []
    for index, quote in enumerate(plain.get("quotes") or []):
        if _located(quote):
            quotes.append(quote)
        else:
            unlocated.append(quote)
            report.diagnostics.append(Diagnostic(
                path=path, line=data["quotes"].item_lines[index], severity="warning",
                message=f"quote without a line range (lines: {quote.get('lines')!r}) moved into the summary",
                hint="find the lines in the run's files and add them as a quote"))
    plain["quotes"] = quotes
    if unlocated:
        plain["summary"] = _with_unlocated(str(plain.get("summary") or ""), unlocated)
    return parse_model(path, Annotation, _strip_lines(plain, data))


def _located(quote: object) -> bool:
    if not isinstance(quote, dict):
        return False
    lines = quote.get("lines")
    return (isinstance(lines, list) and len(lines) == 2 and all(isinstance(v, int) for v in lines)
            and 1 <= lines[0] <= lines[1])


def _with_unlocated(summary: str, quotes: list) -> str:
    parts = [summary.rstrip("\n")]
    for quote in quotes:
        label = quote.get("label", "") if isinstance(quote, dict) else ""
        text = quote.get("text", quote) if isinstance(quote, dict) else quote
        parts.append(f"Published quote without a line range ({label or 'unlabelled'}): {str(text).strip()}")
    return "\n\n".join(p for p in parts if p) + "\n"


def _strip_lines(plain: dict, data: dict) -> dict:
    """Keep the line-annotated original for diagnostics where the value is unchanged."""
    return {k: (data[k] if k in data and data[k] is v else v) for k, v in plain.items()}


# --------------------------------------------------------------------------------------------- baselines

def convert_baselines(path: Path, gpu: str, gpu_name: str, raw_dir: Path | None) -> list[ProblemBaselines]:
    """ProblemBaselines per problem; per-shape lines (and so peak fractions) only where raw output exists."""
    published = load_published_baselines(path)
    measured = _parse_time(published.generated)
    converted = []
    for problem, variants in sorted(published.problems.items()):
        raw = raw_dir / f"{problem}.txt" if raw_dir is not None else None
        per_shape = _raw_lines(raw) if raw is not None and raw.is_file() else {}
        lines = {line: _line(variants[line], per_shape.get(line)) for line in LINES if line in variants}
        converted.append(ProblemBaselines(problem=problem, deck=kbh_deck_for_gpu(gpu), gpu=gpu, gpu_name=gpu_name, measured_at=measured,
                                          environment={"source": f"KernelBench-Hard {Path(path).name}",
                                                       "hardware": published.hardware or ""},
                                          lines=lines))
    return converted


def _parse_time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _line(figures: BaselineFigures, shapes: list[ShapeTiming] | None) -> Line:
    summary = (f"KernelBench-Hard published geomean over {figures.n_shapes or '?'} shapes: {figures.ms} ms, "
               f"{figures.tflops} TFLOP/s, {figures.gbps} GB/s")
    if not shapes:
        return Line(source=summary + "; per-shape timings not published, so no peak_fraction")
    fractions = [s.fraction for s in shapes if s.fraction]
    peak = math.exp(sum(math.log(f) for f in fractions) / len(fractions)) if fractions else None
    return Line(source=summary + "; per-shape fraction = solution_peak_fraction × solution_ms / line_ms "
                                 "from raw benchmark output", shapes=shapes, peak_fraction=peak)


def _raw_lines(path: Path) -> dict[str, list[ShapeTiming]]:
    """Per-shape timings by line; fractions scaled from the template solution's (same ceiling, same work)."""
    raw, solution_fraction = parse_raw_baselines(path)
    solution_ms = {s.index: s.ms for s in raw if s.variant == "solution"}
    lines: dict[str, list[ShapeTiming]] = {}
    for shape in raw:
        if shape.variant not in LINES:
            continue
        fraction = None
        if shape.index in solution_fraction and shape.index in solution_ms and shape.ms > 0:
            fraction = solution_fraction[shape.index] * solution_ms[shape.index] / shape.ms
        lines.setdefault(shape.variant, []).append(ShapeTiming(
            index=shape.index, shape={}, median_ms=shape.ms, tflops=shape.tflops, gbps=shape.gbps,
            fraction=fraction, timing_method="published"))
    return lines
