"""The diff page of a regraded board: per cell, what its own benchmark published against what this grader found,
with the reason for every disagreement (kernelbench.results.regraded), the agreement counts and the ratio of peak
fractions per problem."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from kernelbench.results.leaderboard import Board
from kernelbench.results.regraded import compare
from kernelbench.sitegen import urls
from kernelbench.sitegen.pages import Page

PUBLISHED = ("PASS", "FAIL", "ERR")
OURS = ("PASS", "FAIL", "INVALID", "ERR")


def diff_pages(data) -> list[Page]:
    pages = []
    for board in data.boards:
        results = _regraded(data, board)
        if results:
            pages.append(_diff_page(board, results))
    return pages


def _regraded(data, board: Board) -> list:
    """The validated results of the board's runs regraded from another benchmark's board (kept compact by the
    load: validated again here, one board at a time)."""
    regraded = (r for r in data.dataset.runs.values()
                if r.facts.regraded and r.facts.deck == board.deck and r.facts.gpu == board.gpu)
    return [r.full_result() for r in sorted(regraded, key=lambda r: r.run_id)]


def _diff_page(board: Board, results: list) -> Page:
    rows = [_row(compare(result)) for result in results]
    hardware = sorted({r.provenance.published_hardware for r in results if r.provenance.published_hardware})
    gaps = peak_gaps([compare(result) for result in results])
    inputs = {
        "board": {"title": board.title, "url": urls.board_url(board.deck, board.gpu, False),
                  "gpu": board.gpu_name or board.gpu, "published_hardware": hardware, "boards": sorted({r.provenance.board for r in results})},
        "rows": rows,
        "gaps": gaps,
        "their_benchmark": any(g["theirs_here"] is not None for g in gaps),
        "agreement": _agreement(rows),
        "three_way": three_way(rows),
        "checker_disputes": checker_disputes(rows),
        "ratios": _ratios(rows),
        "disagreements": sum(not r["agrees"] for r in rows),
        "held_out": held_out_summary(rows),
        "invalid_by_class": sorted(Counter(c for r in rows for c in r["classes"]).items()),
    }
    return Page(urls.diff_url(board.deck, board.gpu), "diff.html", f"Published against regraded — {board.title}", inputs,
                context=lambda page, extra: inputs, kind="index")


def _row(d) -> dict:
    return {"run_id": d.run_id, "url": urls.run_url(d.run_id), "agent": d.agent, "problem": d.problem,
            "published": d.published, "ours": d.ours, "published_peak": d.published_peak, "our_peak": d.our_peak,
            "ratio": d.peak_ratio, "agrees": d.agrees, "kind": d.kind, "reason": d.reason, "evidence": d.evidence,
            "classes": list(d.classes), "peak_same_inputs": d.peak_same_inputs, "peak_new_tensors": d.peak_new_tensors,
            "adaptations": list(d.adaptations), "own_checker": d.own_checker, "own_checker_line": d.own_checker_line,
            "their_cases_checked": d.their_cases_checked, "correct": d.correct,
            "held_out": d.held_out, "held_out_note": d.held_out_note, "held_out_cases": d.held_out_cases,
            "held_out_passed": d.held_out_passed}


def held_out_summary(rows: list[dict]) -> dict:
    """How many cells were right on the published shapes, and of those, judged and right on the held-out ones."""
    right = [r for r in rows if r["correct"]]
    judged = [r for r in right if r["held_out"] is not None]
    return {"correct": len(right), "judged": len(judged), "held_out_right": sum(bool(r["held_out"]) for r in judged)}


def peak_gaps(cells: list) -> list[dict]:
    """Every cell scored on both boards, its peak gap split into ceilings, input protocol and absolute speed,
    the largest gaps (either way) first."""
    gaps = []
    for d in cells:
        if d.peak_ratio is None or d.peak_ratio <= 0:
            continue
        gaps.append({"run_id": d.run_id, "url": urls.run_url(d.run_id), "agent": d.agent, "problem": d.problem,
                     "ratio": d.peak_ratio, "ceiling": d.ceiling_factor, "protocol": d.protocol_factor,
                     "speed": d.speed_factor, "roofs": _roofs(d), "theirs_here": d.their_benchmark_peak,
                     "machine": d.machine_factor, "grader": d.grader_factor})
    return sorted(gaps, key=lambda g: -abs(math.log(g["ratio"])))


def _roofs(d) -> str:
    if d.published_ceiling is None or d.our_ceiling is None:
        return ""
    theirs, ours = d.published_ceiling, d.our_ceiling
    return f"{theirs.value:g} {theirs.unit} {theirs.dtype} / {ours.value:g} {ours.unit} {ours.dtype}"


def three_way(rows: list[dict]) -> list[dict]:
    """(published, their own checker here, ours) with the number of cells, for the cells their checker ran on:
    where their checker here agrees with ours, the board's verdict changed with the machine, not the grader."""
    counts = Counter((r["published"], r["own_checker"], r["ours"]) for r in rows if r["own_checker"])
    return [{"published": p, "theirs_here": t, "ours": o, "cells": n} for (p, t, o), n in sorted(counts.items())]


def checker_disputes(rows: list[dict]) -> list[dict]:
    """The cells where their own checker, run here, gives a verdict other than their published one, with the line
    that says why: their board and their checker disagree about the same solution."""
    return [r for r in rows if r["own_checker"] in ("PASS", "FAIL") and r["own_checker"] != r["published"]]


def _agreement(rows: list[dict]) -> list[dict]:
    counts = Counter((r["published"], r["ours"]) for r in rows)
    return [{"published": p, "cells": [counts.get((p, o), 0) for o in OURS], "total": sum(
        counts.get((p, o), 0) for o in OURS)} for p in PUBLISHED]


def _ratios(rows: list[dict]) -> list[dict]:
    """Per problem: the geometric mean of ours / published over cells both scored."""
    by_problem: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["ratio"] is not None and r["ratio"] > 0:
            by_problem[r["problem"]].append(r["ratio"])
    problems = sorted({r["problem"] for r in rows})
    return [{"problem": p, "cells": len(by_problem[p]),
             "ratio": math.exp(sum(map(math.log, by_problem[p])) / len(by_problem[p])) if by_problem[p] else None}
            for p in problems]
