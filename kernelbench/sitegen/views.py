"""Plain, JSON-able views of the dataset and boards for the templates.

These hold no derivation of their own (that is `kernelbench.results.leaderboard`'s job): they pick fields,
attach URLs and format shapes, so that a page's inputs can be hashed and its template stays simple.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kernelbench.results.dataset import AnnotationRecord, CompactResult, Dataset, RunFacts, RunRecord
from kernelbench.sitegen import urls

if TYPE_CHECKING:  # the board models are needed by the boards' pages, not by a run's
    from kernelbench.results.leaderboard import Board, Cell


def shape_label(shape: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def cell_view(cell: Cell) -> dict:
    return {
        "agent": cell.agent,
        "deck": cell.deck,
        "problem": cell.problem,
        "gpu": cell.gpu,
        "status": cell.status.value,
        "label": cell.label,
        "peak_fraction": cell.peak_fraction,
        "peak_interval": cell.peak_interval,
        "median": cell.median_peak_fraction,
        "spread": cell.spread,
        "trial_range": cell.trial_range,
        "n_scored": cell.n_scored,
        "n_trials": cell.n_trials,
        "n_passed": cell.n_passed,
        "run_id": cell.run_id,
        "url": urls.run_url(cell.run_id),
        "problem_url": urls.problem_url(cell.problem, cell.deck),
        "verdict": cell.verdict.value if cell.verdict else None,
        "unaudited": cell.unaudited,
        "held_out": cell.held_out,
        "held_out_relative": cell.held_out_relative,
        "counts": cell.counts,
        "scripted": False,
    }


def shown_runs(boards: list[Board]) -> dict[str, Cell]:
    """run_id → the cell that shows it (a run's "unaudited" mark is its cell's)."""
    return {cell.run_id: cell for board in boards for cell in board.cells}


class ShownCell(Protocol):
    """What a run's view takes of the board cell that shows it (a rebuild that plans one run passes the mark its
    previous build kept)."""

    unaudited: bool


def run_view(record: RunRecord, dataset: Dataset, shown: Mapping[str, ShownCell]) -> dict:
    """Everything the runs table and the run page header show about one run: its result's own part
    (`result_view`, made when the result was loaded for a run kept compact) with its addresses, its annotation's
    verdict and its cell's mark."""
    own = record.compact.derived if record.compact is not None else result_view(record.result)
    annotation = dataset.annotation_for(record.run_id)
    cell = shown.get(record.run_id)
    view = dict(own)  # the keys in their order, the values below filled in their places
    view["url"] = urls.run_url(record.run_id)
    view["agent_url"] = urls.agent_url(own["agent"])
    view["problem_url"] = urls.problem_url(own["problem"], own["deck"])
    view["imported"] = record.imported
    view["verdict"] = annotation.verdict.value if annotation else None
    view["unaudited"] = bool(cell and cell.unaudited)
    return view


def result_view(result) -> dict:
    """The part of a run's view its result.json alone gives (`run_view` fills in the rest: addresses, verdict,
    unaudited mark; None here). Read-only: the views of later builds share what it holds."""
    session, grading = result.session, result.grading
    return {
        "run_id": result.run_id,
        "url": None,
        "agent": result.agent,
        "agent_url": None,
        "harness": result.harness,
        "model": result.model,
        "effort": result.effort,
        "deck": result.deck,
        "problem": result.problem,
        "problem_url": None,
        "gpu": result.gpu,
        "trial": result.trial,
        "status": result.status.value,
        "outcome": grading.outcome.value,
        "reasons": list(grading.reasons),
        "peak_fraction": grading.peak_fraction,
        "peak_interval": (None if grading.peak_fraction_interval is None else
                          [grading.peak_fraction_interval.low, grading.peak_fraction_interval.high]),
        "scripted": result.scripted,
        "source": result.source,
        "imported": None,
        "elapsed_s": session.elapsed_s,
        "budget_s": session.budget_s,
        "tokens": session.tokens.model_dump(),
        "tokens_total": session.tokens.total,
        "cost_usd": session.cost_usd,
        "cost_is_estimate": session.cost_is_estimate,
        "complete": session.complete,
        "timed_out": session.timed_out,
        "exit_code": session.exit_code,
        "verdict": None,
        "unaudited": None,
        "ceiling": grading.ceiling.model_dump() if grading.ceiling else None,
        "shapes": [_shape_view(s) for s in grading.shapes],
        "conditions": conditions_view(grading.conditions),
        "shows_conditions": any(s.conditions is not None for s in grading.shapes),
        "baseline_names": sorted({name for s in grading.shapes for name in s.baselines_ms}),
        "shows_host_bound": any(s.host_bound_samples is not None for s in grading.shapes),
        "compared_protocols": [name for name in ("tensors", "same")
                               if any(name in s.protocols for s in grading.shapes)],
        "findings": [_finding_view(f) for f in result.integrity],
        "held_out": held_out_view(grading.held_out),
        "sanitizer": sanitizer_view(grading.sanitizer),
        "provenance": provenance_view(result.provenance),
    }


def compact_result(result, raw: bytes, dataset: Dataset) -> CompactResult:
    """What a site build keeps of a run's result (results.dataset.CompactResult): made as it is loaded, with its
    run view's own part and its board trial against the baselines loaded."""
    from kernelbench.results.leaderboard import make_trial

    facts = RunFacts.of(result)
    trial = make_trial(result, None, dataset.baselines_for(facts.problem, facts.gpu, facts.deck))
    return CompactResult.of(raw, facts, result_view(result),
                            (dataset.baselines_digest(facts.problem, facts.gpu, facts.deck), trial))


def held_out_view(held) -> dict | None:
    """The held-out cases of a grading (docs/grading.md, "Held-out cases"), and their timing ("Held-out timing"),
    for the run page; None: none declared. A result written before held-out timing has none (empty fields)."""
    if held is None:
        return None
    return {"correct": held.correct, "note": held.note, "passed": held.passed, "total": len(held.checks),
            "heldout_hash": held.heldout_hash,
            "checks": [{"case": c.case, "shape": shape_label(held.shapes[c.shape_index])
                        if c.shape_index < len(held.shapes) else "", "seed": c.seed, "passed": c.passed,
                        "message": c.message} for c in held.checks],
            "relative": held.relative_peak_fraction, "timing_note": held.timing_note,
            "timings": [{**_shape_view(t), "samples": len(t.samples_ms)} for t in held.timings]}


def sanitizer_view(result) -> dict | None:
    """The sanitizer stage of a grading (docs/grading.md, "Sanitizer"), for the run page; None: recorded before
    the stage existed. The tool's lines are the candidate's process's output: the template escapes them."""
    if result is None:
        return None
    return {"passed": result.passed, "note": result.note, "case": result.case,
            "shape": shape_label(result.shape) if result.shape else "", "seconds": result.seconds,
            "limit_s": result.limit_s,
            "runs": [{"tool": r.tool, "ran": r.ran, "note": r.note, "seconds": r.seconds,
                      "reference_seconds": r.reference_seconds,
                      "findings": [{"kernel": f.kernel, "kind": f.kind, "severity": f.severity, "count": f.count,
                                    "fails": f.fails, "in_reference": f.in_reference,
                                    "evidence": "\n".join(f.evidence)} for f in r.findings]}
                     for r in result.runs]}


def provenance_view(provenance) -> dict | None:
    """Where a regraded solution comes from, with the link to the file upstream (its text is not kept here)."""
    if provenance is None:
        return None
    return {**provenance.model_dump(mode="json", exclude={"mapping"}), "upstream_url": provenance.upstream_url}


def _shape_view(shape) -> dict:
    return {
        "index": shape.index,
        "label": shape_label(shape.shape),
        "shape": shape.shape,
        "median_ms": shape.median_ms,
        "median_interval_ms": (None if shape.median_interval_ms is None else
                               [shape.median_interval_ms.low, shape.median_interval_ms.high]),
        "tflops": shape.tflops,
        "gbps": shape.gbps,
        "fraction": shape.fraction,
        "flops": shape.flops,
        "bytes": shape.bytes,
        "baselines_ms": dict(shape.baselines_ms),
        "host_bound": None if shape.host_bound_samples is None else
        f"{shape.host_bound_samples} of {len(shape.samples_ms)}",
        "host_median_ms": shape.host_median_ms,
        "protocol_ms": {name: p.median_ms for name, p in shape.protocols.items()},
        "conditions": conditions_view(shape.conditions),
    }


def conditions_view(conditions) -> dict | None:
    """The GPU's conditions as the run page shows them (None: recorded before the grader sampled the GPU)."""
    if conditions is None:
        return None
    def span(r):
        return None if r is None else [r.min, r.median, r.max]

    return {
        "measured": conditions.measured,
        "reason": conditions.reason,
        "gpu": conditions.gpu,
        "samples": conditions.samples,
        "period_ms": conditions.period_ms,
        "sm_clock_mhz": span(conditions.sm_clock_mhz),
        "memory_clock_mhz": span(conditions.memory_clock_mhz),
        "max_temperature_c": conditions.max_temperature_c,
        "power_w": span(conditions.power_w),
        "reasons": list(conditions.throttle_reasons),
        "throttled": conditions.throttled,
        "throttled_share": conditions.throttled_share,
        "refused": sorted(conditions.refused),
    }


def _finding_view(finding) -> dict:
    return {
        "check": finding.check,
        "klass": finding.klass,
        "class_name": finding.class_name,
        "severity": finding.severity,
        "message": finding.message,
        "evidence": finding.evidence,
        "file": finding.file,
        "line": finding.line,
    }


def annotation_view(record: AnnotationRecord | None, shown_path=str) -> dict | None:
    """The annotation with each quote's check (verified, mismatch, unverifiable...)."""
    if record is None or not record.run_known:
        return None
    a = record.annotation
    checks = {c.index: c for c in record.quote_checks}
    quotes = []
    for i, q in enumerate(a.quotes):
        check = checks.get(i)
        state = check.state.value if check else "unchecked"
        quotes.append(
            {
                "file": q.file,
                "lines": list(q.lines),
                "label": q.label,
                "text": q.text,
                "state": state,
                "ok": not (check and check.state.is_problem),
                "problem": check.note if check else "",
                "actual": check.actual if check else None,
            }
        )
    return {
        "verdict": a.verdict.value,
        "summary": a.summary,
        "implication": a.implication,
        "auditor": a.auditor,
        "date": a.date,
        "source": shown_path(record.path),
        "quotes": quotes,
    }


def board_rows(board: Board, scripted: set[str]) -> list[dict]:
    """The heatmap's rows: one per agent in board order, one slot per problem (None where never run)."""
    rows = []
    for summary in board.agents:
        cells = []
        for problem in board.problems:
            cell = board.cell(summary.agent, problem)
            view = cell_view(cell) if cell else None
            if view:
                view["scripted"] = summary.agent in scripted
            cells.append(view)
        rows.append(
            {
                "agent": summary.agent,
                "agent_url": urls.agent_url(summary.agent),
                "scripted": summary.agent in scripted,
                "passes": summary.passes,
                "passes_without_score": summary.passes_without_score,
                "invalid": summary.invalid,
                "cells": cells,
            }
        )
    return rows


def scripted_agents(dataset: Dataset) -> set[str]:
    return {r.facts.agent for r in dataset.runs.values() if r.facts.scripted}
