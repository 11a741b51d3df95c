"""Problem pages, one per (deck, problem): description, shapes, regime, ceilings per GPU, a roofline per GPU, every
attempt; for a problem of another benchmark's deck, how its concepts map onto this grader and what is lost."""

from __future__ import annotations

from kernelbench.base.decks import MAIN_DECK, deck_title
from kernelbench.problems.spec import ProblemSpec
from kernelbench.sitegen import charts, urls
from kernelbench.sitegen.pages import Page
from kernelbench.sitegen.views import shape_label


def problem_pages(data) -> list[Page]:
    keys = sorted({(MAIN_DECK, p) for p in data.dataset.problems} | {(r["deck"], r["problem"]) for r in data.runs.values()},
                  key=lambda k: (k[0] != MAIN_DECK, k))
    pages, summaries = [], []
    for deck, problem_id in keys:
        page, summary = _problem_page(data, deck, problem_id)
        pages.append(page)
        summaries.append(summary)
    inputs = {"problems": summaries}
    index = Page(
        urls.PROBLEMS_INDEX, "problems.html", "Problems", inputs, context=lambda p, e: inputs, kind="index"
    )
    return [index, *pages]


def _problem_page(data, deck: str, problem_id: str) -> tuple[Page, dict]:
    # the problems folder holds our own deck; another deck's problem is known through its runs only
    record = data.dataset.problems.get(problem_id) if deck == MAIN_DECK else None
    spec = record.spec if record else None
    runs = data.runs_of(problem=problem_id, deck=deck)
    ceilings = [_ceiling_view(c) for b in data.boards if b.deck == deck for c in b.ceilings
                if c.problem == problem_id]
    view = {
        "id": problem_id,
        "deck": deck,
        "deck_title": deck_title(deck),
        "foreign": deck != MAIN_DECK,
        "mapping": _mapping_view(data, deck, problem_id),
        "title": spec.title if spec else "",
        "description": spec.description if spec else "",
        "spec": _spec_view(spec),
        "shapes": _shapes_view(spec),
        "ceilings": ceilings,
        "library_lines": _library_lines_view(data, problem_id, deck),
        "line_notes": _line_notes(data, problem_id) if deck == MAIN_DECK else [],
    }
    rooflines = _roofline_inputs(spec, runs)
    inputs = {"problem": view, "runs": runs, "rooflines": rooflines}

    def context(page: Page, extra: dict) -> dict:
        figures = [
            {
                "gpu": r["gpu"],
                "figure": charts.roofline(
                    r["points"], r["peak_tflops"], r["dram_gbps"], f"{problem_id} on {r['gpu']}", page.href
                ),
            }
            for r in rooflines
        ]
        return {"problem": view, "runs": runs, "charts": {"rooflines": figures}}

    summary = {
        "id": problem_id,
        "deck": deck,
        "url": urls.problem_url(problem_id, deck),
        "title": view["title"],
        "regime": spec.regime if spec else None,
        "attempts": len(runs),
        "passes": sum(r["status"] == "PASS" for r in runs),
        "best": max((c["best"] for c in ceilings if c["best"] is not None), default=None),
    }
    sources = (data.shown_path(record.problem.spec_file),) if record else ()
    return Page(
        urls.problem_url(problem_id, deck),
        "problem.html",
        problem_id,
        inputs,
        hashed=data.hashed(inputs),
        sources=sources,
        context=context,
        kind="problem",
    ), summary


def _mapping_view(data, deck: str, problem_id: str) -> dict | None:
    """How the problem's own benchmark defines it against what this grader does, as recorded by its regraded runs."""
    regraded = (r for r in data.dataset.runs.values()
                if r.facts.regraded and r.facts.deck == deck and r.facts.problem == problem_id)
    for record in sorted(regraded, key=lambda r: r.run_id):  # (the few regraded runs sorted, not the deck)
        result = record.full_result()
        if result.provenance and result.provenance.mapping:
            return {"layout": result.provenance.layout,
                    "rows": [m.model_dump() for m in result.provenance.mapping]}
    return None


def _spec_view(spec: ProblemSpec | None) -> dict | None:
    if spec is None:
        return None
    return {
        "regime": spec.regime,
        "ceiling": spec.ceiling,
        "flops": spec.flops,
        "bytes": spec.bytes,
        "forbidden": list(spec.forbidden),
        "leak_checks": list(spec.leak_checks),
    }


def _shapes_view(spec: ProblemSpec | None) -> list[dict]:
    if spec is None:
        return []
    shapes = []
    for shape in spec.shapes:
        try:
            flops, nbytes = spec.flops_of(shape), spec.bytes_of(shape)
        except (ArithmeticError, KeyError, ValueError):
            flops = nbytes = None
        shapes.append(
            {
                "label": shape_label(shape),
                "gflop": flops / 1e9 if flops else None,
                "mbytes": nbytes / 1e6 if nbytes else None,
                "intensity": flops / nbytes if flops and nbytes else None,
            }
        )
    return shapes


def _ceiling_view(ceiling) -> dict:
    return {
        "gpu": ceiling.gpu,
        "best": ceiling.best_peak_fraction,
        "best_agent": ceiling.best_agent,
        "best_url": urls.run_url(ceiling.best_run_id) if ceiling.best_run_id else None,
        "baselines": dict(ceiling.baselines),
    }


_ENVIRONMENT_SHOWN = ("torch", "triton", "cuda", "driver")


def _library_lines_view(data, problem_id: str, deck: str = MAIN_DECK) -> list[dict]:
    """Per GPU with a baselines file: every line as measured (its source names the library and version), with the
    reason of a line that could not be measured; shown whether or not any run exists on that GPU."""
    views = []
    current = _current_hash(data, problem_id, deck)
    for (of_deck, gpu), baselines in sorted(data.dataset.baselines.get(problem_id, {}).items()):
        if of_deck != deck:
            continue
        environment = baselines.environment
        lines = [
            {
                "name": name,
                "available": line.available,
                "source": line.source,
                "reason": line.reason,
                "peak_fraction": line.peak_fraction,
                "shapes_us": [(s.index, s.median_ms * 1000.0) for s in sorted(line.shapes, key=lambda s: s.index)],
            }
            for name, line in sorted(baselines.lines.items(), key=lambda item: _line_order(item[0]))
        ]
        views.append({
            "gpu": gpu,
            "gpu_name": baselines.gpu_name,
            "measured_at": baselines.measured_at.strftime("%Y-%m-%d") if baselines.measured_at else "",
            # its lines were timed on other problem files than the page describes (a shape, the reference or the
            # library line changed since): a reader weighs them as such
            "earlier_version": bool(current and baselines.problem_hash and baselines.problem_hash != current),
            "environment": [(key, environment[key]) for key in _ENVIRONMENT_SHOWN if environment.get(key)],
            "shape_count": max((len(line["shapes_us"]) for line in lines), default=0),
            "lines": lines,
        })
    return views


def _current_hash(data, problem_id: str, deck: str) -> str:
    record = data.dataset.problems.get(problem_id) if deck == MAIN_DECK else None
    return record.problem.content_hash if record is not None else ""


def _line_order(name: str) -> tuple[int, str]:
    order = ("eager", "compiled", "sota")
    return (order.index(name) if name in order else len(order), name)


def _line_notes(data, problem_id: str) -> list[tuple[str, str]]:
    notes = data.dataset.baseline_notes.get(problem_id)
    return sorted(notes.by_line().items(), key=lambda item: _line_order(item[0])) if notes else []


def _roofline_inputs(spec: ProblemSpec | None, runs: list[dict]) -> list[dict]:
    """Per GPU: every attempt's shapes as points, and the roofs (from the runs' ceilings, else the profile)."""
    by_gpu: dict[str, list[dict]] = {}
    work: dict[str, tuple] = {}  # shape label -> (flops, bytes): formulas are evaluated once per shape
    for run in runs:
        by_gpu.setdefault(run["gpu"], []).append(run)
    result = []
    for gpu, gpu_runs in sorted(by_gpu.items()):
        points = [p for run in gpu_runs for p in _points(run, spec, work)]
        if not points:
            continue
        peak, bandwidth = _roofs(gpu, gpu_runs, spec)
        result.append({"gpu": gpu, "points": points, "peak_tflops": peak, "dram_gbps": bandwidth})
    return result


def _points(run: dict, spec: ProblemSpec | None, work: dict) -> list[dict]:
    points = []
    for shape in run["shapes"]:
        shape = dict(shape)
        if spec is not None and (not shape["flops"] or not shape["bytes"]):
            shape["flops"], shape["bytes"] = _work_of(spec, shape, work)
        point = charts.roofline_point(shape, run)
        if point:
            points.append(point)
    return points


def _work_of(spec: ProblemSpec, shape: dict, cache: dict) -> tuple[float | None, float | None]:
    key = shape["label"]
    if key not in cache:
        try:
            cache[key] = (spec.flops_of(shape["shape"]), spec.bytes_of(shape["shape"]))
        except (ArithmeticError, KeyError, ValueError):
            cache[key] = (None, None)
    return cache[key]


def _roofs(gpu: str, runs: list[dict], spec: ProblemSpec | None) -> tuple[float | None, float | None]:
    for run in runs:
        ceiling = run["ceiling"]
        if ceiling and (ceiling.get("peak_tflops") or ceiling.get("dram_gbps")):
            return ceiling.get("peak_tflops"), ceiling.get("dram_gbps")
    try:
        from kernelbench.hardware import get_profile

        profile = get_profile(gpu)
    except Exception:  # noqa: BLE001 - an unknown GPU key simply means no roofs to draw
        return None, None
    dtype = spec.ceiling if spec and spec.ceiling in profile.peak_tflops else "fp32"
    return profile.peak_tflops.get(dtype), profile.dram_gbps
