"""Plotly figures for the site, drawn offline by the bundled plotly.js.

Figures are written directly as plotly's JSON figure schema (trace and layout dicts): building them through
`plotly.graph_objects` validates every property in Python and cost seconds per board on the 1,000-run deck,
while plotly.js validates the same JSON when it draws. Links inside figures (`customdata`) are already
relative to the page that embeds them. Every text from the data passes `chart_text` on its way in.
"""

from __future__ import annotations

import math
from typing import Callable

from markupsafe import escape

from kernelbench.results.leaderboard import Board
from kernelbench.text import visible

STATUS_COLOURS = {"PASS": "#1d7f4e", "FAIL": "#b3541e", "ERR": "#7a7f8a", "INVALID": "#b0124b"}
LINE_COLOURS = {"eager": "#7a7f8a", "compiled": "#c28f00", "sota": "#6a3fb5", "best": "#2456c9"}
SYMBOLS = [
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "x",
    "cross",
    "star",
    "triangle-down",
    "pentagon",
    "hexagon",
    "hourglass",
    "bowtie",
]
Href = Callable[[str], str]


# plotly.js draws its toolbar over the top 30 px at the right: the title sits below that strip, so that a long
# title in a narrow chart never runs under it
TOOLBAR_PX = 34


def _layout(title: str, **extra) -> dict:
    """The site's layout for one figure. Axes grow their margins to fit their tick labels and titles, and the top
    margin holds the toolbar's strip and the title beneath it."""
    base = dict(
        # a title may name a problem or a GPU from the data
        title=dict(text=chart_text(title), x=0.01, xanchor="left", y=1, yref="container", yanchor="top",
                   pad=dict(t=TOOLBAR_PX)),
        template="plotly_white",
        font=dict(family="system-ui, sans-serif", size=12),
        hoverlabel=dict(namelength=-1),
    )
    base.update(extra)
    base["margin"] = {"l": 60, "r": 20, "b": 60, **extra.get("margin", {}), "t": TOOLBAR_PX + 46}
    for axis in ("xaxis", "yaxis"):
        base[axis] = dict(automargin=True, **extra.get(axis, {}))
    return base


def _figure(traces: list[dict], layout: dict) -> dict:
    return {"data": traces, "layout": layout}


def _trace(kind: str, **props) -> dict:
    return {"type": kind, **props}


# ------------------------------------------------------------------------------------------------ heatmap


def heatmap(rows: list[dict], problems: list[str], href: Href) -> dict:
    """agent × problem, coloured by peak_fraction of counted cells; text says status and marks; click opens."""
    z, text, hover, links = [], [], [], []
    for row in rows:
        z.append([c["peak_fraction"] if c and c["counts"] else None for c in row["cells"]])
        text.append([_cell_text(c) for c in row["cells"]])
        hover.append([_cell_hover(row["agent"], c) for c in row["cells"]])
        links.append([href(c["url"]) if c else "" for c in row["cells"]])
    trace = _trace(
        "heatmap",
        z=z,
        x=[chart_text(p) for p in problems],
        y=[chart_text(r["agent"]) for r in rows],
        text=text,
        texttemplate="%{text}",
        hovertext=hover,
        hoverinfo="text",
        customdata=links,
        colorscale="Viridis",
        zmin=0,
        zmax=max([v for r in z for v in r if v is not None] + [0.5]),
        xgap=2,
        ygap=2,
        colorbar=dict(title=dict(text="peak fraction"), tickformat=".0%"),
    )
    height = 160 + 30 * max(1, len(rows))
    return _figure(
        [trace],
        _layout(
            "peak_fraction by agent and problem (grey: not counted)",
            height=height,
            plot_bgcolor="#e4e6eb",
            yaxis=dict(autorange="reversed"),
            xaxis=dict(tickangle=-30),
        ),
    )


def _cell_text(cell: dict | None) -> str:
    if not cell:
        return ""
    label = chart_text(cell["label"])
    if cell["peak_fraction"] is not None:
        label += f" {100 * cell['peak_fraction']:.1f}%"
    marks = {"rubric_leak": " ⚑leak", "reward_hack": " ⚑hack", "bug": " ⚑bug", "interesting": " ★"}
    label += marks.get(cell["verdict"] or "", "")
    if cell["unaudited"]:
        label += " ?"
    return label


def _cell_hover(agent: str, cell: dict | None) -> str:
    if not cell:
        return chart_text(f"{agent}: not run")
    parts = [f"{agent} · {cell['problem']}", f"{cell['label']}"]
    if cell["peak_fraction"] is not None:
        parts.append(f"peak fraction {100 * cell['peak_fraction']:.2f}%")
    if cell.get("peak_interval"):
        low, high = cell["peak_interval"]
        parts.append(f"95% interval {100 * low:.2f}% – {100 * high:.2f}%")
    if cell.get("trial_range"):
        low, high = cell["trial_range"]
        parts.append(f"{cell['n_scored']} scored trials from {100 * low:.2f}% to {100 * high:.2f}%")
    parts.append(f"trials {cell['n_trials']} (valid passes {cell['n_passed']})")
    if cell["verdict"]:
        parts.append(f"verdict: {cell['verdict']}")
    if cell["unaudited"]:
        parts.append("unaudited (above 10% of peak, no annotation)")
    if cell.get("held_out") is not None:
        parts.append("held-out cases: " + ("right" if cell["held_out"] else "wrong"))
    if cell.get("held_out_relative") is not None:
        parts.append(f"held-out shapes: {cell['held_out_relative']:.3g}x the published shapes' peak fraction")
    return "<br>".join(chart_text(p) for p in parts)


def chart_text(text: str) -> str:
    """Text from the data as plotly shows it: plotly renders a subset of HTML (links, styles, line breaks) in
    titles, labels, legends, hover text and annotations, so every text from the data is escaped for it, and
    characters that act instead of being read (bidi overrides, zero-width characters) are shown escaped."""
    return str(escape(visible(text)))


# ------------------------------------------------------------------------------------------------ bars


def pass_counts(board: Board) -> dict:
    names = [a.agent for a in board.agents][::-1]
    agents = [chart_text(a) for a in names]
    by_agent = {a.agent: a for a in board.agents}
    scored = [by_agent[a].passes - by_agent[a].passes_without_score for a in names]
    unscored = [by_agent[a].passes_without_score for a in names]
    invalid = [by_agent[a].invalid for a in names]
    traces = [
        _trace(
            "bar", y=agents, x=scored, orientation="h", name="PASS", marker=dict(color=STATUS_COLOURS["PASS"])
        ),
        _trace(
            "bar",
            y=agents,
            x=unscored,
            orientation="h",
            name="PASS without score",
            marker=dict(color="#8fc7a8"),
        ),
        _trace(
            "bar",
            y=agents,
            x=invalid,
            orientation="h",
            name="INVALID (not counted)",
            marker=dict(color=STATUS_COLOURS["INVALID"]),
        ),
    ]
    return _figure(
        traces,
        _layout(
            f"Problems passed (of {len(board.problems)})",
            barmode="stack",
            height=140 + 26 * max(1, len(agents)),
            xaxis=dict(dtick=1, range=[0, max(1, len(board.problems))]),
        ),
    )


def ceilings(board: Board) -> dict:
    problems = [chart_text(c.problem) for c in board.ceilings]
    traces = [
        _trace(
            "bar",
            x=problems,
            y=[c.best_peak_fraction for c in board.ceilings],
            name="best valid cell",
            marker=dict(color=LINE_COLOURS["best"]),
            hovertext=[chart_text(c.best_agent or "nobody") for c in board.ceilings],
        )
    ]
    for line in ("eager", "compiled", "sota"):
        values = [c.baselines.get(line) for c in board.ceilings]
        if any(v is not None for v in values):
            traces.append(
                _trace("bar", x=problems, y=values, name=line, marker=dict(color=LINE_COLOURS[line]))
            )
    return _figure(
        traces,
        _layout(
            "Per problem: best valid cell vs baselines",
            barmode="group",
            yaxis=dict(title=dict(text="peak fraction"), tickformat=".0%"),
            height=420,
        ),
    )


# ------------------------------------------------------------------------------------------------ fast_p


def fast_p(board: Board) -> dict:
    traces = []
    for curve in board.fast_p:
        traces.append(
            _trace(
                "scatter",
                x=list(curve.p),
                y=list(curve.fast),
                mode="lines",
                name=chart_text(f"{curve.agent} vs {curve.baseline}"),
                line=dict(dash="solid" if curve.baseline == "eager" else "dash", shape="hv"),
                legendgroup=chart_text(curve.agent),  # an id, never drawn, but data all the same
                hovertemplate="p=%{x}: %{y:.0%}<extra>%{fullData.name}</extra>",
            )
        )
    return _figure(
        traces,
        _layout(
            "fast_p: correct and faster than baseline × p<br><sub>solid: eager, dashed: SOTA</sub>",
            xaxis=dict(title=dict(text="p (speed-up factor)")),
            height=440 + 9 * len(traces),
            legend=dict(orientation="h", y=-0.2, yanchor="top", font=dict(size=10)),
            yaxis=dict(title=dict(text="share of problems"), tickformat=".0%", range=[0, 1.05]),
        ),
    )


# ------------------------------------------------------------------------------------------------ efficiency


def efficiency(runs: list[dict], href: Href) -> dict:
    """Score against tokens, cost or time (a menu switches the x axis); one point per scored run."""
    scored = [r for r in runs if r["peak_fraction"] is not None]
    axes = [
        ("tokens", "tokens_total", "tokens used"),
        ("cost", "cost_usd", "cost (USD)"),
        ("time", "elapsed_s", "wall time (s)"),
    ]
    usable = [a for a in axes if any(r.get(a[1]) for r in scored)] or axes[2:]
    first = usable[0]
    traces = []
    agents = sorted({r["agent"] for r in scored})
    for agent in agents:
        mine = [r for r in scored if r["agent"] == agent]
        traces.append(
            _trace(
                "scatter",
                x=[r.get(first[1]) or None for r in mine],
                y=[r["peak_fraction"] for r in mine],
                mode="markers",
                name=chart_text(agent),
                customdata=[href(r["url"]) for r in mine],
                marker=dict(symbol=["x" if r["status"] != "PASS" else "circle" for r in mine], size=9),
                hovertext=[chart_text(f"{r['problem']} · {r['status']}") for r in mine],
            )
        )
    buttons = [
        dict(
            label=label,
            method="update",
            args=[
                {"x": [[r.get(key) or None for r in scored if r["agent"] == agent] for agent in agents]},
                {"xaxis.title.text": title},
            ],
        )
        for label, key, title in usable
    ]
    return _figure(
        traces,
        _layout(
            "Efficiency: score against effort (x = not PASS)",
            height=480 + 9 * len(traces),
            xaxis=dict(title=dict(text=first[2]), type="log"),
            yaxis=dict(title=dict(text="peak fraction"), tickformat=".0%"),
            margin=dict(b=100),
            legend=dict(orientation="h", y=-0.3, yanchor="top", font=dict(size=10)),
            updatemenus=[
                dict(
                    buttons=buttons,
                    direction="right",
                    x=1,
                    xanchor="right",
                    y=1.02,
                    yanchor="bottom",
                    type="buttons",
                )
            ]
            if len(buttons) > 1
            else [],
        ),
    )


# ------------------------------------------------------------------------------------------------ roofline


def roofline(
    points: list[dict], peak_tflops: float | None, dram_gbps: float | None, title: str, href: Href
) -> dict:
    """Arithmetic intensity (FLOP/byte) against achieved TFLOP/s under the compute and bandwidth roofs.

    points: one per (attempt, shape) with keys intensity, tflops, shape_index, shape, agent, status, url.
    """
    traces = []
    shapes = sorted({p["shape_index"] for p in points})
    for index in shapes:
        mine = [p for p in points if p["shape_index"] == index]
        traces.append(
            _trace(
                "scatter",
                x=[p["intensity"] for p in mine],
                y=[p["tflops"] for p in mine],
                mode="markers",
                name=chart_text(f"shape {index}: {mine[0]['shape']}"[:60]),
                customdata=[href(p["url"]) for p in mine],
                marker=dict(
                    symbol=SYMBOLS[index % len(SYMBOLS)],
                    size=10,
                    line=dict(width=1, color="#222"),
                    color=[STATUS_COLOURS.get(p["status"], "#444") for p in mine],
                ),
                hovertext=[
                    chart_text(f"{p['agent']} · {p['status']} · {p['tflops']:.3g} TFLOP/s") for p in mine
                ],
            )
        )
    traces += _roofs(points, peak_tflops, dram_gbps)
    return _figure(
        traces,
        _layout(
            title,
            height=460,
            xaxis=dict(title=dict(text="arithmetic intensity (FLOP/byte)"), type="log"),
            yaxis=dict(title=dict(text="achieved TFLOP/s"), type="log"),
            legend=dict(title=dict(text="symbol = shape, colour = status")),
        ),
    )


def _roofs(points: list[dict], peak_tflops: float | None, dram_gbps: float | None) -> list[dict]:
    xs = [p["intensity"] for p in points if p["intensity"] > 0] or [1.0]
    lo, hi = min(xs) / 4, max(xs) * 4
    if peak_tflops and dram_gbps:
        ridge = peak_tflops * 1e3 / dram_gbps  # FLOP/byte where the two roofs meet
        lo, hi = min(lo, ridge / 4), max(hi, ridge * 4)
    grid = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    roofs = []
    if dram_gbps:
        roofs.append(
            _trace(
                "scatter",
                x=grid,
                y=[x * dram_gbps / 1e3 for x in grid],
                mode="lines",
                name=f"bandwidth roof {dram_gbps:.0f} GB/s",
                line=dict(color="#999", dash="dot"),
            )
        )
    if peak_tflops:
        roofs.append(
            _trace(
                "scatter",
                x=[grid[0], grid[-1]],
                y=[peak_tflops, peak_tflops],
                mode="lines",
                name=f"compute roof {peak_tflops:.0f} TFLOP/s",
                line=dict(color="#444", dash="dash"),
            )
        )
    if peak_tflops and dram_gbps:
        roofs.append(
            _trace(
                "scatter",
                x=grid,
                y=[min(peak_tflops, x * dram_gbps / 1e3) for x in grid],
                mode="lines",
                name="attainable",
                line=dict(color="#2456c9", width=1),
            )
        )
    return roofs


def roofline_point(shape: dict, run: dict) -> dict | None:
    """A shape result as a roofline point, or None without FLOPs, bytes and a time."""
    flops, nbytes, ms = shape.get("flops"), shape.get("bytes"), shape.get("median_ms")
    if not flops or not nbytes or not ms or ms <= 0 or math.isnan(ms):
        return None
    return {
        "intensity": flops / nbytes,
        "tflops": flops / (ms * 1e-3) / 1e12,
        "shape_index": shape["index"],
        "shape": shape["label"],
        "agent": run["agent"],
        "status": run["status"],
        "url": run["url"],
    }
