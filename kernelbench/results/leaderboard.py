"""Leaderboard derivation: pure functions from a `Dataset` to boards, cells, ceilings, pass counts and fast_p.

Vocabulary:
- agent: `harness/model[@effort]` (`kernelbench.results.run.agent_label`), one row of a board.
- trial: one run of an agent on a problem on a GPU; a cell aggregates every trial of (agent, problem, gpu).
- valid trial: not INVALID (integrity) and not annotated `reward_hack` or `rubric_leak` (an auditor found the
  score does not measure the work the problem asks for). Only valid trials give a cell its score and only cells
  whose shown trial is a valid PASS count towards ceilings, pass counts and fast_p. Invalid, hacked and leaking
  cells stay on the board, visible, with `counts=False`.
- board: all cells of one GPU (one board per GPU key).

Stable API for the site build (fields are only ever added): `build_boards`, `Board`, `Cell`, `Trial`, `Speedup`,
`ProblemCeiling`, `AgentSummary`, `FastPCurve`, `unaudited_cells`, `leaderboard_payload`, `export_json`,
`export_csv`. Everything here is a pure function of its arguments except the two export functions, which write
one file each (atomically).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.base.decks import MAIN_DECK, deck_title
from kernelbench.errors import KernelBenchError
from kernelbench.fileio import atomic_write_json, atomic_write_text
from kernelbench.problems.baselines import LINES, ProblemBaselines
from kernelbench.results.annotation import Annotation, Verdict
from kernelbench.results.dataset import Dataset, RunRecord
from kernelbench.results.run import RunResult, Status, agent_label

P_GRID: tuple[float, ...] = tuple(round(i * 0.1, 1) for i in range(41))  # 0.0, 0.1, ..., 4.0
FAST_P_BASELINES: tuple[str, ...] = ("eager", "sota")
UNAUDITED_THRESHOLD = 0.10  # a cell above this share of peak wants a human audit
EXPORT_FIELDS = ("agent", "harness", "model", "effort", "deck", "problem", "gpu", "status", "peak_fraction", "run_id",
                 "n_trials", "verdict", "held_out", "held_out_relative")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SpeedupMethod(str, Enum):
    """How a speed-up against a baseline line was obtained."""

    PER_SHAPE_TIME = "per_shape_time"            # geometric mean over shapes of baseline_ms / candidate_ms
    PEAK_FRACTION_RATIO = "peak_fraction_ratio"  # candidate peak_fraction / baseline peak_fraction
    UNKNOWN = "unknown"                          # neither timings nor both peak fractions are available


class Speedup(Frozen):
    """Speed-up of one trial over one baseline line (eager, compiled or sota) on the same GPU.

    value: > 1 means faster than the baseline; None when method is UNKNOWN.
    shapes: how many shapes entered the geometric mean (PER_SHAPE_TIME only, else 0).
    """

    baseline: str
    value: float | None = None
    method: SpeedupMethod = SpeedupMethod.UNKNOWN
    shapes: int = 0


class Trial(Frozen):
    """One run as the board sees it.

    status: PASS/FAIL/ERR/INVALID from grading (`status_of`). peak_fraction: graded score (None when unscored).
    verdict: the annotation's verdict for this run, if any. valid: not INVALID and not reward_hack.
    integrity_classes: classes (rows of docs/integrity.md) of the run's error-severity findings.
    speedups: line → Speedup against eager / compiled / sota.
    source: "harness" or "import:<what>" (imported runs have no transcript or files).
    held_out: right on the held-out cases (docs/grading.md, "Held-out cases"); False: wrong on some; None: not
      judged (none declared, graded before there were any, or the published shapes failed). Not in the status.
    held_out_relative: the held-out shapes' peak fraction over the published shapes' (HeldOut.relative_peak_fraction,
      docs/grading.md, "Held-out timing"); None where not measured. Not in the score.
    """

    run_id: str
    harness: str
    model: str
    effort: str | None = None
    deck: str = MAIN_DECK
    problem: str
    gpu: str
    trial: int = 1
    status: Status
    peak_fraction: float | None = None
    peak_interval: tuple[float, float] | None = None  # the score's 95% bootstrap interval over its samples
    verdict: Verdict | None = None
    valid: bool = True
    integrity_classes: tuple[int, ...] = ()
    speedups: dict[str, Speedup] = Field(default_factory=dict)
    source: str = "harness"
    held_out: bool | None = None
    held_out_relative: float | None = None

    @property
    def agent(self) -> str:
        return agent_label(self.harness, self.model, self.effort)

    @property
    def valid_pass(self) -> bool:
        return self.valid and self.status is Status.PASS


class Cell(Frozen):
    """All trials of one (agent, problem, gpu), summarised for the heatmap.

    status: PASS if any trial passed (valid first, then reward_hack), else INVALID if any trial was invalid,
      else FAIL if any trial left a wrong solution, else ERR (no solution in any trial).
    scored: False for "PASS without score" (correct, but peak_fraction is null), as the published board has.
    peak_fraction: score of the shown trial (`run_id`): the best valid scored pass when there is one.
    peak_interval: that trial's 95% bootstrap interval of the score over its timed samples (None: not measured).
    median_peak_fraction / spread: median and max-min of the valid scored passes (None without any).
    trial_range: the least and greatest score of the valid scored passes, where there are at least
      TRIAL_SPREAD_MIN of them (fewer say little about how the agent's score varies from trial to trial).
    n_trials / n_passed / n_invalid: trials in total, valid passes, INVALID trials.
    run_id: the trial shown and linked (best valid pass, else the most informative trial).
    run_ids: every trial, oldest first. trials: the trials themselves.
    verdict: annotation verdict of the shown trial; verdicts: run_id → verdict for every annotated trial.
    counts: the shown trial is a valid PASS, so the cell counts for ceilings, pass counts and fast_p.
    unaudited: peak_fraction above UNAUDITED_THRESHOLD, not INVALID, and the shown trial has no annotation.
    speedups: the shown trial's speed-ups (line → Speedup).
    held_out: the shown trial's held-out result (Trial.held_out), a column of its own beside the status.
    held_out_relative: the shown trial's held-out timing against its published one (Trial.held_out_relative).
    """

    agent: str
    harness: str
    model: str
    effort: str | None = None
    deck: str = MAIN_DECK
    problem: str
    gpu: str
    status: Status
    scored: bool = False
    peak_fraction: float | None = None
    peak_interval: tuple[float, float] | None = None  # the shown trial's 95% bootstrap interval
    median_peak_fraction: float | None = None
    spread: float | None = None
    trial_range: tuple[float, float] | None = None
    n_scored: int = 0                      # valid scored passes
    n_trials: int
    n_passed: int = 0
    n_invalid: int = 0
    run_id: str
    run_ids: tuple[str, ...] = ()
    trials: tuple[Trial, ...] = ()
    verdict: Verdict | None = None
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    counts: bool = False
    unaudited: bool = False
    speedups: dict[str, Speedup] = Field(default_factory=dict)
    held_out: bool | None = None
    held_out_relative: float | None = None

    @property
    def label(self) -> str:
        """Text for the cell: 'PASS', 'PASS without score', 'FAIL', 'ERR' or 'INVALID'."""
        if self.status is Status.PASS and not self.scored:
            return "PASS without score"
        return self.status.value


class ProblemCeiling(Frozen):
    """Best valid result on one problem and GPU against the baseline lines.

    best_peak_fraction / best_agent / best_run_id: the highest-scoring counted cell (None if nobody passed
      with a score). baselines: line → peak_fraction of eager / compiled / sota on this GPU (None: unmeasured).
    baseline_sources: line → where that number came from ("baselines file", "runs' grading").
    n_cells / n_counted: cells on the board for this problem, and those that count.
    excluded_run_ids: invalid or reward_hack cells that scored above the ceiling (shown, never counted).
    """

    problem: str
    gpu: str
    deck: str = MAIN_DECK
    best_peak_fraction: float | None = None
    best_agent: str | None = None
    best_run_id: str | None = None
    baselines: dict[str, float | None] = Field(default_factory=dict)
    baseline_sources: dict[str, str] = Field(default_factory=dict)
    n_cells: int = 0
    n_counted: int = 0
    excluded_run_ids: tuple[str, ...] = ()


class AgentSummary(Frozen):
    """One agent's row summary on a board (pass-count bars).

    passes: counted PASS cells (valid), including passes without score; passes_without_score: of those, unscored.
    attempted: problems with at least one trial. n_problems: problems on the board.
    invalid / reward_hacks: cells shown as INVALID / whose shown trial is annotated reward_hack.
    mean_peak_fraction: mean over the board's problems of counted scores (0 where not counted or unscored).
    """

    agent: str
    harness: str
    model: str
    effort: str | None = None
    gpu: str
    passes: int = 0
    passes_without_score: int = 0
    attempted: int = 0
    n_problems: int = 0
    invalid: int = 0
    reward_hacks: int = 0
    mean_peak_fraction: float = 0.0


class FastPCurve(Frozen):
    """fast_p of one agent against one baseline line: for each p, the share of the board's problems where the
    agent's cell counts (valid PASS) and its speed-up over the baseline exceeds p.

    At p = 0 every counted cell is included (a correct kernel is faster than 0× anything), also when the speed-up
    is unknown; for p > 0 a cell needs a known speed-up. methods: speed-up method → number of counted cells that
    used it (so the chart can say "from per-shape times" or "from peak_fraction ratios").
    """

    agent: str
    gpu: str
    baseline: str
    p: tuple[float, ...]
    fast: tuple[float, ...]
    n_problems: int
    methods: dict[str, int] = Field(default_factory=dict)


class Board(Frozen):
    """Everything on one (deck, GPU) leaderboard: a board never mixes decks, since two decks' problems of the same
    name are different problems.

    deck: the problems' deck (kernelbench.base.decks). gpu: profile key; gpu_name: a readable name from the runs'
    environment (or the key).
    agents: summaries in board order (passes, then mean_peak_fraction, descending; then name).
    problems: problem ids on this board, sorted. cells: one per (agent, problem) with at least one trial.
    ceilings: one per problem. fast_p: one curve per agent and baseline line of FAST_P_BASELINES.
    """

    gpu: str
    gpu_name: str = ""
    deck: str = MAIN_DECK
    regraded: bool = False                # its cells are another benchmark's solutions graded again here
    agents: tuple[AgentSummary, ...] = ()
    problems: tuple[str, ...] = ()
    cells: tuple[Cell, ...] = ()
    ceilings: tuple[ProblemCeiling, ...] = ()
    fast_p: tuple[FastPCurve, ...] = ()

    def cell(self, agent: str, problem: str) -> Cell | None:
        return next((c for c in self.cells if c.agent == agent and c.problem == problem), None)

    def cells_by_key(self) -> dict[tuple[str, str], Cell]:
        """(agent, problem) → cell, for rendering the heatmap without repeated scans."""
        return {(c.agent, c.problem): c for c in self.cells}

    def ceiling(self, problem: str) -> ProblemCeiling | None:
        return next((c for c in self.ceilings if c.problem == problem), None)

    @property
    def key(self) -> str:
        """The board's name in URLs and exports: its GPU on our deck, `<deck>-<gpu>` on another."""
        return self.gpu if self.deck == MAIN_DECK else f"{self.deck}-{self.gpu}"

    @property
    def title(self) -> str:
        name = self.gpu_name or self.gpu
        if self.deck == MAIN_DECK:
            return name
        return f"{deck_title(self.deck)}, {'regraded here on ' if self.regraded else ''}{name}"


# --------------------------------------------------------------------------------------------- trials

def speedup_of(result: RunResult, line: str, baselines: ProblemBaselines | None) -> Speedup:
    """Speed-up of a run over one baseline line: per-shape median times where both sides have them, else the
    ratio of peak fractions (same ceiling, so the ratio equals the time ratio for a single shape)."""
    ratios = _per_shape_ratios(result, line, baselines)
    if ratios:
        return Speedup(baseline=line, value=_geomean(ratios), method=SpeedupMethod.PER_SHAPE_TIME,
                       shapes=len(ratios))
    ours = result.grading.peak_fraction
    theirs = baseline_peak_fraction(result, line, baselines)
    ratio = _ratio(ours, theirs) if ours is not None and theirs else None
    if ratio is not None:
        return Speedup(baseline=line, value=ratio, method=SpeedupMethod.PEAK_FRACTION_RATIO)
    return Speedup(baseline=line)


def _ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator when that is a finite positive number: extreme but valid inputs (a time of
    1e-320 ms) must not put an infinity or a zero on the board."""
    try:
        value = numerator / denominator
    except (ZeroDivisionError, OverflowError):
        return None
    return value if 0 < value < math.inf else None


def _per_shape_ratios(result: RunResult, line: str, baselines: ProblemBaselines | None) -> list[float]:
    stored = baselines.lines.get(line) if baselines else None
    by_index = {s.index: s for s in stored.shapes} if stored and stored.available else {}
    ratios = []
    for shape in result.grading.shapes:
        if not shape.median_ms or shape.median_ms <= 0:
            continue
        base_ms = shape.baselines_ms.get(line)
        reference = by_index.get(shape.index)
        if base_ms is None and reference is not None and (not reference.shape or reference.shape == shape.shape):
            base_ms = reference.median_ms
        ratio = _ratio(base_ms, shape.median_ms) if base_ms and base_ms > 0 else None
        if ratio is not None:
            ratios.append(ratio)
    return ratios


def baseline_peak_fraction(result: RunResult | None, line: str, baselines: ProblemBaselines | None) -> float | None:
    """peak_fraction of a baseline line: the baselines file first, else what the run's grading recorded."""
    stored = baselines.lines.get(line) if baselines else None
    if stored is not None and stored.available and stored.peak_fraction:
        return stored.peak_fraction
    if result is not None:
        return result.grading.baselines.get(line)
    return None


def _geomean(values: list[float]) -> float:
    """Geometric mean of positive finite values (through logs, which neither overflow nor underflow), capped
    at the largest float."""
    try:
        return math.exp(sum(math.log(v) for v in values) / len(values))
    except OverflowError:
        return sys.float_info.max


# the valid scored passes a cell needs before the board shows the spread of their scores
TRIAL_SPREAD_MIN = 3

# an auditor's finding that the score is not a result of the work asked for: shown, never counted
NOT_COUNTED_VERDICTS = frozenset({Verdict.REWARD_HACK, Verdict.RUBRIC_LEAK})


def _interval(interval) -> tuple[float, float] | None:
    return None if interval is None else (interval.low, interval.high)


def make_trial(result: RunResult, annotation: Annotation | None = None,
               baselines: ProblemBaselines | None = None) -> Trial:
    """The board's view of one run (pure)."""
    verdict = annotation.verdict if annotation else None
    status = result.status
    return Trial(run_id=result.run_id, harness=result.harness, model=result.model, effort=result.effort or None,
                 deck=result.deck, problem=result.problem, gpu=result.gpu, trial=result.trial, status=status,
                 peak_fraction=result.grading.peak_fraction, verdict=verdict,
                 peak_interval=_interval(result.grading.peak_fraction_interval),
                 valid=status is not Status.INVALID and verdict not in NOT_COUNTED_VERDICTS,
                 integrity_classes=tuple(sorted({f.klass for f in result.integrity
                                                 if f.severity == "error" and f.klass is not None})),
                 speedups={line: speedup_of(result, line, baselines) for line in LINES},
                 source=result.source,
                 held_out=result.grading.held_out.correct if result.grading.held_out is not None else None,
                 held_out_relative=(result.grading.held_out.relative_peak_fraction
                                    if result.grading.held_out is not None else None))


def trials_of(dataset: Dataset, make: Callable[..., Trial] = make_trial) -> list[Trial]:
    """Every loaded run as a Trial, with its annotation and its problem's baselines on that GPU. `make`: what
    makes a trial (a memo of `make_trial`, in a process that builds again and again)."""
    return [trial_of(r, dataset, make) for r in sorted(dataset.runs.values(), key=_run_order)]


def trial_of(record: RunRecord, dataset: Dataset, make: Callable[..., Trial] = make_trial) -> Trial:
    """One run's Trial. A run kept compact (RunRecord.compact) has its trial made when it was loaded, against the
    baselines then loaded: taken when those are the baselines now (the same bytes), and given its annotation's
    verdict; made again from its validated result otherwise (its result.json read again: one that changed since it
    was loaded keeps the trial it had, and the next build, which sees the change, makes it afresh)."""
    facts = record.facts
    annotation = dataset.annotation_for(record.run_id)
    baselines = dataset.baselines_for(facts.problem, facts.gpu, facts.deck)
    if record.compact is None:
        return make(record.result, annotation, baselines)
    digest = dataset.baselines_digest(facts.problem, facts.gpu, facts.deck)
    trial = record.compact.trial_for(digest)
    if trial is None:
        try:
            trial = make_trial(record.full_result(), None, baselines)
        except (KernelBenchError, OSError):  # result.json changed since it was loaded: the next build loads it afresh
            trial = record.compact.kept_trial()
        else:
            record.compact.keep_trial(digest, trial)
    return with_verdict(trial, annotation)


def with_verdict(trial: Trial, annotation: Annotation | None) -> Trial:
    """`trial` (made without an annotation) as `make_trial` makes it with `annotation`."""
    if annotation is None:
        return trial
    verdict = annotation.verdict
    return trial.model_copy(update={"verdict": verdict, "valid": trial.status is not Status.INVALID
                                    and verdict not in NOT_COUNTED_VERDICTS})


def _run_order(record: RunRecord) -> tuple:
    started = record.facts.started
    return (started is None, started or 0, record.run_id)


# --------------------------------------------------------------------------------------------- cells

def _score_key(trial: Trial) -> tuple:
    """Order for 'best': scored before unscored, higher peak first, then the latest run."""
    return (trial.peak_fraction is not None, trial.peak_fraction or 0.0, trial.run_id)


def shown_trial(trials: list[Trial]) -> Trial:
    """The trial a cell shows and links: best valid pass, else best hacked pass, else best INVALID, else the
    latest trial with a (wrong) solution, else the latest trial."""
    tiers = [
        [t for t in trials if t.valid_pass],
        [t for t in trials if t.status is Status.PASS],
        [t for t in trials if t.status is Status.INVALID],
        [t for t in trials if t.status is Status.FAIL],
    ]
    for tier in tiers:
        if tier:
            return max(tier, key=_score_key)
    return max(trials, key=lambda t: t.run_id)


def aggregate_cell(trials: Iterable[Trial], unaudited_threshold: float = UNAUDITED_THRESHOLD) -> Cell:
    """Summarise the trials of one (agent, problem, gpu) into a cell (pure)."""
    trials = sorted(trials, key=lambda t: (t.trial, t.run_id))
    if not trials:
        raise ValueError("a cell needs at least one trial")
    shown = shown_trial(trials)
    scores = [t.peak_fraction for t in trials if t.valid_pass and t.peak_fraction is not None]
    counts = shown.valid_pass
    return Cell(
        agent=shown.agent, harness=shown.harness, model=shown.model, effort=shown.effort, deck=shown.deck,
        problem=shown.problem,
        gpu=shown.gpu, status=shown.status, scored=shown.peak_fraction is not None,
        peak_fraction=shown.peak_fraction, peak_interval=shown.peak_interval,
        median_peak_fraction=statistics.median(scores) if scores else None,
        spread=(max(scores) - min(scores)) if scores else None,
        trial_range=(min(scores), max(scores)) if len(scores) >= TRIAL_SPREAD_MIN else None, n_scored=len(scores),
        n_trials=len(trials), n_passed=sum(t.valid_pass for t in trials),
        n_invalid=sum(t.status is Status.INVALID for t in trials),
        run_id=shown.run_id, run_ids=tuple(t.run_id for t in trials), trials=tuple(trials),
        verdict=shown.verdict, verdicts={t.run_id: t.verdict for t in trials if t.verdict is not None},
        counts=counts, unaudited=_unaudited(shown, unaudited_threshold), speedups=shown.speedups,
        held_out=shown.held_out, held_out_relative=shown.held_out_relative)


def _unaudited(shown: Trial, threshold: float) -> bool:
    return (shown.peak_fraction is not None and shown.peak_fraction > threshold
            and shown.status is not Status.INVALID and shown.verdict is None)


def build_cells(trials: Iterable[Trial], unaudited_threshold: float = UNAUDITED_THRESHOLD) -> list[Cell]:
    """Group trials by (agent, deck, problem, gpu) and aggregate each group."""
    groups: dict[tuple[str, str, str, str], list[Trial]] = defaultdict(list)
    for trial in trials:
        groups[(trial.agent, trial.deck, trial.problem, trial.gpu)].append(trial)
    return [aggregate_cell(groups[key], unaudited_threshold) for key in sorted(groups)]


# --------------------------------------------------------------------------------------------- ceilings

def problem_ceiling(problem: str, gpu: str, cells: list[Cell], baselines: ProblemBaselines | None = None,
                    recorded: dict[str, list[float]] | None = None, deck: str = MAIN_DECK) -> ProblemCeiling:
    """Best counted cell of one problem against its baseline lines (pure).

    recorded: line → peak fractions that runs' gradings recorded for this line, used when no baselines file
    has the line (their median is taken).
    """
    cells = [c for c in cells if c.problem == problem and c.gpu == gpu and c.deck == deck]
    scored = [c for c in cells if c.counts and c.peak_fraction is not None]
    best = max(scored, key=lambda c: (c.peak_fraction, c.run_id)) if scored else None
    top = best.peak_fraction if best else None
    excluded = tuple(sorted(c.run_id for c in cells if not c.counts and c.peak_fraction is not None
                            and (top is None or c.peak_fraction > top)))
    lines, sources = _baseline_lines(baselines, recorded or {})
    return ProblemCeiling(problem=problem, gpu=gpu, deck=deck, best_peak_fraction=top,
                          best_agent=best.agent if best else None, best_run_id=best.run_id if best else None,
                          baselines=lines, baseline_sources=sources, n_cells=len(cells),
                          n_counted=sum(c.counts for c in cells), excluded_run_ids=excluded)


def _baseline_lines(baselines: ProblemBaselines | None,
                    recorded: dict[str, list[float]]) -> tuple[dict[str, float | None], dict[str, str]]:
    values: dict[str, float | None] = {}
    sources: dict[str, str] = {}
    for line in LINES:
        stored = baselines.lines.get(line) if baselines else None
        if stored is not None and stored.available and stored.peak_fraction is not None:
            values[line], sources[line] = stored.peak_fraction, "baselines file"
        elif recorded.get(line):
            values[line], sources[line] = statistics.median(recorded[line]), "runs' grading"
        else:
            values[line] = None
    return values, sources


def _recorded_baselines(dataset: Dataset, problem: str, gpu: str, deck: str = MAIN_DECK) -> dict[str, list[float]]:
    recorded: dict[str, list[float]] = defaultdict(list)
    for record in dataset.runs.values():
        facts = record.facts
        if facts.problem == problem and facts.gpu == gpu and facts.deck == deck:
            for line, value in facts.baselines:
                if value is not None:
                    recorded[line].append(value)
    return recorded


# --------------------------------------------------------------------------------------------- agents, fast_p

def agent_summaries(cells: list[Cell], problems: list[str]) -> list[AgentSummary]:
    """Pass counts and mean score per agent, in board order (pure)."""
    by_agent: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        by_agent[cell.agent].append(cell)
    summaries = [_summary(agent_cells, len(problems)) for agent_cells in by_agent.values()]
    return sorted(summaries, key=lambda s: (-s.passes, -s.mean_peak_fraction, s.agent))


def _summary(cells: list[Cell], n_problems: int) -> AgentSummary:
    first = cells[0]
    counted = [c for c in cells if c.counts]
    total = sum(c.peak_fraction or 0.0 for c in counted)
    return AgentSummary(agent=first.agent, harness=first.harness, model=first.model, effort=first.effort,
                        gpu=first.gpu, passes=len(counted),
                        passes_without_score=sum(not c.scored for c in counted), attempted=len(cells),
                        n_problems=n_problems, invalid=sum(c.status is Status.INVALID for c in cells),
                        reward_hacks=sum(c.verdict is Verdict.REWARD_HACK for c in cells),
                        mean_peak_fraction=total / n_problems if n_problems else 0.0)


def fast_p_curve(agent: str, gpu: str, cells: list[Cell], n_problems: int, baseline: str,
                 grid: Iterable[float] = P_GRID) -> FastPCurve:
    """fast_p of one agent against one baseline over the p grid (pure); see FastPCurve for the definition."""
    mine = [c for c in cells if c.agent == agent and c.gpu == gpu and c.counts]
    speedups = [c.speedups.get(baseline, Speedup(baseline=baseline)) for c in mine]
    grid = tuple(grid)
    fast = tuple(_share(speedups, p, n_problems) for p in grid)
    methods: dict[str, int] = defaultdict(int)
    for s in speedups:
        methods[s.method.value] += 1
    return FastPCurve(agent=agent, gpu=gpu, baseline=baseline, p=grid, fast=fast, n_problems=n_problems,
                      methods=dict(methods))


def _share(speedups: list[Speedup], p: float, n_problems: int) -> float:
    if not n_problems:
        return 0.0
    hits = sum(1 for s in speedups if p <= 0 or (s.value is not None and s.value > p))
    return hits / n_problems


# --------------------------------------------------------------------------------------------- boards

def build_board(gpu: str, cells: list[Cell], dataset: Dataset | None = None, gpu_name: str = "",
                grid: Iterable[float] = P_GRID, deck: str = MAIN_DECK) -> Board:
    """One (deck, GPU) board from its cells; the dataset (optional) supplies baselines for the ceilings."""
    cells = sorted((c for c in cells if c.gpu == gpu and c.deck == deck), key=lambda c: (c.agent, c.problem))
    problems = sorted({c.problem for c in cells})
    agents = agent_summaries(cells, problems)
    ceilings = [problem_ceiling(p, gpu, cells,
                                dataset.baselines_for(p, gpu, deck) if dataset else None,
                                _recorded_baselines(dataset, p, gpu, deck) if dataset else None, deck)
                for p in problems]
    grid = tuple(grid)
    curves = [fast_p_curve(a.agent, gpu, cells, len(problems), line, grid)
              for a in agents for line in FAST_P_BASELINES]
    regraded = any(t.source.startswith("regrade:") for c in cells for t in c.trials)
    return Board(gpu=gpu, gpu_name=gpu_name or gpu, deck=deck, regraded=regraded, agents=tuple(agents),
                 problems=tuple(problems),
                 cells=tuple(cells), ceilings=tuple(ceilings), fast_p=tuple(curves))


def build_boards(dataset: Dataset, grid: Iterable[float] = P_GRID,
                 unaudited_threshold: float = UNAUDITED_THRESHOLD,
                 make: Callable[..., Trial] = make_trial) -> list[Board]:
    """One board per (deck, GPU key) found in the dataset's runs: our deck's first, then by deck and key."""
    cells = build_cells(trials_of(dataset, make), unaudited_threshold)
    names = _gpu_names(dataset)
    keys = sorted({(c.deck != MAIN_DECK, c.deck, c.gpu) for c in cells})
    return [build_board(gpu, cells, dataset, names.get(gpu, ""), grid, deck) for _, deck, gpu in keys]


def _gpu_names(dataset: Dataset) -> dict[str, str]:
    names: dict[str, str] = {}
    for record in dataset.runs.values():
        facts = record.facts
        if facts.gpu_name:
            names.setdefault(facts.gpu, facts.gpu_name)
    return names


def unaudited_cells(boards: Iterable[Board]) -> list[Cell]:
    """High-scoring cells nobody has annotated yet, highest score first."""
    cells = [c for b in boards for c in b.cells if c.unaudited]
    return sorted(cells, key=lambda c: (-(c.peak_fraction or 0.0), c.run_id))


# --------------------------------------------------------------------------------------------- exports

def export_rows(boards: Iterable[Board]) -> list[dict]:
    """The cells of every board as the leaderboard.json cell objects of docs/data.md (exactly EXPORT_FIELDS)."""
    rows = []
    for board in boards:
        for cell in board.cells:
            rows.append({"agent": cell.agent, "harness": cell.harness, "model": cell.model, "effort": cell.effort,
                         "deck": cell.deck, "problem": cell.problem, "gpu": cell.gpu, "status": cell.status.value,
                         "peak_fraction": _json_number(cell.peak_fraction), "run_id": cell.run_id,
                         "n_trials": cell.n_trials,
                         "verdict": cell.verdict.value if cell.verdict else None, "held_out": cell.held_out,
                         "held_out_relative": _json_number(cell.held_out_relative)})
    return rows


def _json_number(value: float | None) -> float | None:
    """A number as strict JSON can hold it (validated inputs never give anything else: this is the last guard)."""
    return value if value is None or math.isfinite(value) else None


def leaderboard_payload(boards: Iterable[Board], generated: datetime | str | None = None) -> dict:
    """`{"generated": ISO time, "cells": [...]}`; pass `generated` for a reproducible file."""
    if generated is None:
        generated = datetime.now(UTC).replace(microsecond=0)
    stamp = generated.isoformat() if isinstance(generated, datetime) else str(generated)
    return {"generated": stamp, "cells": export_rows(boards)}


def export_json(boards: Iterable[Board], path: Path, generated: datetime | str | None = None) -> dict:
    """Write leaderboard.json atomically and return what was written."""
    payload = leaderboard_payload(boards, generated)
    atomic_write_json(Path(path), payload)
    return payload


def export_csv(boards: Iterable[Board], path: Path) -> None:
    """Write the same cells as CSV (header = EXPORT_FIELDS; null → empty field), atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in export_rows(boards):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    atomic_write_text(Path(path), buffer.getvalue())
