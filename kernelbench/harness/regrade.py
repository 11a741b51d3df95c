"""`kernelbench regrade`: every cell of another benchmark's published board graded again by this grader.

Inputs: the board (`leaderboard.json` in KernelBench-Hard's published format), the folder of its solution files
(`<run_id>_solution.py.txt`, as kernelbench.com publishes them) and its deck folder (one problem folder per column,
in whatever layout kernelbench.problems.layouts reads). Output: one run directory per cell,
`<runs>/<published run id>_regraded/` with result.json (our grading, the published verdict and the solution's
provenance: repository, commit, path, sha256), check.log and benchmark.log. The solution's text is never copied
into the run directory: the run page links to it upstream.

A cell is written whole or not at all (a staging folder renamed into place), so Ctrl-C loses only the cell being
graded and `--resume` carries on where the last call stopped. Whatever a solution does (fail to import, need a
package this machine lacks, target another GPU, hang, exhaust memory) is that cell's outcome; the regrade goes on.
Cells are spread over every GPU this process sees (`--gpus`, default all): each grading keeps to one GPU, each GPU
runs up to `--jobs` gradings side by side (their correctness checks and builds in parallel), and a grading's
measuring stages run with nothing of the others on that GPU (`GpuTurns`), so a 4-GPU machine measures four cells
at once.
A cell goes to the GPU with the fewest gradings under way: a long cell holds one GPU, not a share of the deck.
A grading that ran out of GPU memory while another grading shared its GPU is not published: the neighbour may have
held the memory it lacked, so that verdict may not be the solution's own. It is graded again after the queue, one
grading a GPU, and that grading is the one kept (its provenance says so, and why): out of memory alone, that is
its verdict.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from kernelbench.base.models import Ceiling
from kernelbench.errors import KernelBenchError
from kernelbench.problems.problem import Problem
from kernelbench.results.published import (
    PublishedAgent,
    PublishedBoard,
    PublishedHardware,
    PublishedResult,
    load_published_board,
)
from kernelbench.results.regraded import out_of_memory_reason, published_status
from kernelbench.results.run import (
    RESULT_FILE,
    Grading,
    MappedConcept,
    Outcome,
    Provenance,
    RunResult,
    Session,
    Status,
    Tokens,
)
from kernelbench.results.rundir import (
    discard_staging,
    gpu_key,
    remove_stale_staging,
    replace_result_field,
    staged_run,
)

SOURCE = "regrade:kernelbench-hard"
RUN_SUFFIX = "_regraded"
SOLUTION_NAMES = ("{run_id}_solution.py.txt", "{run_id}_solution.py", "{run_id}/solution.py")


@dataclass(frozen=True)
class Upstream:
    """Where the solution files come from: a repository at a commit, and the local folder that is its root."""

    repository: str
    commit: str
    root: Path

    def path_of(self, file: Path) -> str:
        try:
            return Path(file).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return Path(file).name


def find_upstream(solutions_dir: Path, repository: str | None, commit: str | None) -> Upstream:
    """The upstream reference: given, or read from SOURCE and COMMIT files in the solutions folder or an ancestor
    (a fetched copy of the repository keeps them at its root)."""
    for folder in [Path(solutions_dir).resolve(), *Path(solutions_dir).resolve().parents]:
        source, stamp = folder / "SOURCE", folder / "COMMIT"
        if source.is_file() and stamp.is_file():
            return Upstream(repository or source.read_text().strip(), commit or stamp.read_text().strip(), folder)
    if repository and commit:
        return Upstream(repository, commit, Path(solutions_dir).resolve())
    raise KernelBenchError("cannot tell which repository and commit the solutions come from", path=solutions_dir,
                           hint="pass --repository URL --commit SHA, or keep SOURCE and COMMIT files at the "
                                "fetched repository's root")


@dataclass
class CellJob:
    agent: PublishedAgent
    problem: str
    cell: PublishedResult
    opened: Problem | None               # the deck's problem of the cell's column (None: the deck has none)
    solution: Path | None

    @property
    def run_id(self) -> str:
        return self.cell.run_id + RUN_SUFFIX


@dataclass
class RegradeReport:
    board: str
    total: int = 0
    skipped: int = 0                                      # finished by an earlier call
    graded: list[str] = field(default_factory=list)
    no_solution: list[str] = field(default_factory=list)  # published run ids with no solution file
    no_problem: list[str] = field(default_factory=list)   # columns with no problem folder in the deck
    stopped: bool = False                                 # --stop-after reached before every cell was graded
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - len(self.graded)


def plan_cells(board: PublishedBoard, solutions_dir: Path, deck_dir: Path) -> list[CellJob]:
    """Every cell of the board, with its problem (opened once per column) and solution file where they exist."""
    from kernelbench.problems.deck import deck_entries

    in_deck = {entry.name: entry for entry in deck_entries(Path(deck_dir))}
    opened: dict[str, Problem] = {}
    jobs = []
    for agent in board.models:
        for problem, cell in agent.results.items():
            solution = next((Path(solutions_dir) / n.format(run_id=cell.run_id) for n in SOLUTION_NAMES
                             if (Path(solutions_dir) / n.format(run_id=cell.run_id)).is_file()), None)
            if problem in in_deck and problem not in opened:
                opened[problem] = in_deck[problem].open()
            jobs.append(CellJob(agent, problem, cell, opened.get(problem), solution))
    return jobs


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------------ one cell

class CellTimeline:
    """Where each grading under way stands: its GPU, when it began, the stage it is in and since when. It feeds the
    regrade's progress (one line per stage into a log) and says what a cell cut short by the end of a call was
    doing, so the time a slow cell takes can be read from the log of the call that lost it."""

    def __init__(self, listener: Callable[[str], None] | None = None):
        self.began = time.monotonic()
        self.listener = listener
        self._lock = threading.Lock()
        self._cells: dict[str, tuple[str | None, float, str, float]] = {}  # run id -> gpu, start, stage, since

    def start(self, job: CellJob, gpu: str | None) -> None:
        now = time.monotonic()
        with self._lock:
            self._cells[job.run_id] = (gpu, now, "queued", now)
        self._tell(job.run_id, "started")

    def stage(self, job: CellJob, name: str, detail: str = "") -> None:
        """The cell's grading entered stage `name`; the stage under way named again only updates how far it has
        got (kept for the cut-short line, not logged: a line per case of every cell would bury the stages)."""
        now = time.monotonic()
        label = f"{name} ({detail})" if detail else name
        with self._lock:
            if job.run_id not in self._cells:
                return
            gpu, began, was, since = self._cells[job.run_id]
            again = was.split(" (", 1)[0] == name
            self._cells[job.run_id] = (gpu, began, label, since if again else now)
        if not again:
            self._tell(job.run_id, label)

    def finish(self, job: CellJob, status: str) -> None:
        """The cell's grading is over, with `status`: said with the time it took."""
        with self._lock:
            entry = self._cells.get(job.run_id)
        if entry is not None:
            self._tell(job.run_id, f"{status} after {time.monotonic() - entry[1]:.0f} s")
        with self._lock:
            self._cells.pop(job.run_id, None)

    def under_way(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            return [f"{run_id}{_on(gpu)}: {now - began:.0f} s in, {now - since:.0f} s of them in {stage}"
                    for run_id, (gpu, began, stage, since) in sorted(self._cells.items())]

    def _tell(self, run_id: str, what: str) -> None:
        if self.listener is not None:
            with self._lock:
                gpu = self._cells.get(run_id, (None,))[0]
            self.listener(f"[{time.monotonic() - self.began:7.1f} s]{_on(gpu)} {run_id}: {what}")


def _on(gpu: str | None) -> str:
    return f" gpu {gpu}" if gpu is not None else ""


class GpuTurns:
    """The turns of the gradings that share one GPU. A measuring stage (counters, timing) runs with nothing of the
    other gradings on the GPU; the stages that use it without measuring (correctness, the launch audit, the
    sanitizer, held-out judging) run side by side with each other, never during a measurement. A neighbour's
    correctness cases running through a timed loop made a cell's medians bimodal (a published 05 kernel: its
    fastest samples 9-12 us, its medians up to 62 us) and ran another out of memory mid-timing. A measurement
    waiting for its turn goes before any stage that asks to start beside the others after it, so it is never
    starved; a stage never asks for a turn while it holds one (grade.run_stages takes them one after another)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._beside = 0           # stages under way side by side
        self._measuring = False
        self._waiting = 0          # measurements waiting for their turn

    def measuring(self, waiting: Callable[[], None]) -> "Turn":
        return Turn(self._take_measuring, self._end_measuring, waiting)

    def beside(self, waiting: Callable[[], None]) -> "Turn":
        return Turn(self._take_beside, self._end_beside, waiting)

    def _take_measuring(self, blocking: bool) -> bool:
        with self._cond:
            if self._measuring or self._beside:
                if not blocking:
                    return False
                self._waiting += 1
                try:
                    self._cond.wait_for(lambda: not self._measuring and not self._beside)
                finally:
                    self._waiting -= 1
            self._measuring = True
            return True

    def _end_measuring(self) -> None:
        with self._cond:
            self._measuring = False
            self._cond.notify_all()

    def _take_beside(self, blocking: bool) -> bool:
        with self._cond:
            if self._measuring or self._waiting:
                if not blocking:
                    return False
                self._cond.wait_for(lambda: not self._measuring and not self._waiting)
            self._beside += 1
            return True

    def _end_beside(self) -> None:
        with self._cond:
            self._beside -= 1
            self._cond.notify_all()


class Turn:
    """One grading's side of a GpuTurns, entered once per group of stages (and again for the next group), telling
    the timeline when it has to wait: the wait is part of a cell's time that no stage of its own accounts for."""

    def __init__(self, take: Callable[[bool], bool], end: Callable[[], None], waiting: Callable[[], None]):
        self.take, self.end, self.waiting = take, end, waiting

    def __enter__(self):
        if not self.take(False):
            self.waiting()
            self.take(True)
        return self

    def __exit__(self, *exc) -> None:
        self.end()


@dataclass
class CellSettings:
    board_name: str
    hardware: PublishedHardware
    upstream: Upstream
    device: str = "cuda"
    shapes: str = "full"
    limits: dict[str, float] = field(default_factory=dict)
    counters: bool = True
    # off: no stage measures (no counter pass, no timing): a survey of the other stages, written to a folder of its
    # own, never a board's cell (kernelbench regrade --timing off)
    timing: bool = True
    sanitizer: bool = False  # the grading's sanitizer stage (off by default until validated on a GPU: docs/grading.md)
    # set on Ctrl-C: the grading under way was cut short by it, so its result is thrown away, never published
    cancelled: threading.Event = field(default_factory=threading.Event)
    gpu: str | None = None  # the profile key the gradings found (a cell without a solution is filed under it)
    timeline: CellTimeline = field(default_factory=CellTimeline)


def provenance_of(job: CellJob, settings: CellSettings, layout: str, mapping: list[MappedConcept]) -> Provenance:
    cell = job.cell
    return Provenance(
        repository=settings.upstream.repository, commit=settings.upstream.commit,
        path=settings.upstream.path_of(job.solution) if job.solution else "",
        sha256=sha256_of(job.solution) if job.solution else None, board=settings.board_name,
        published_run_id=cell.run_id, published_status=published_status(cell.correct, cell.has_solution).value,
        published_peak_fraction=cell.peak_fraction, published_verdict=cell.annotation_verdict,
        published_hardware=settings.hardware.name, published_ceiling=published_ceiling(job, settings.hardware),
        layout=layout, mapping=mapping)


def published_ceiling(job: CellJob, hardware: PublishedHardware) -> Ceiling | None:
    """The ceiling the published board scored this cell against (its problem's regime on the board's GPU)."""
    if job.opened is None:
        return None
    spec = job.opened.spec
    if spec.regime is None or spec.ceiling is None:
        return None
    return hardware.ceiling(spec.regime, spec.ceiling)


def grade_cell_on(gpu: str | None, job: CellJob, settings: CellSettings, runs_dir: Path,
                  turns: GpuTurns | None = None, **publishing) -> RunResult:
    """`grade_cell` with every stage of the grading on `gpu` (None: the process's own), taking its turns on that
    GPU's `turns`; `publishing` as `grade_cell` takes it."""
    from kernelbench.eval.process import on_gpu

    with on_gpu(gpu):
        taken = None
        if turns is not None:
            taken = (turns.measuring(lambda: settings.timeline.stage(job, "waiting for the GPU's measuring turn")),
                     turns.beside(lambda: settings.timeline.stage(job, "waiting for the GPU: another grading "
                                                                       "is measuring")))
        return grade_cell(job, settings, runs_dir, taken, **publishing)


def grade_cell(job: CellJob, settings: CellSettings, runs_dir: Path, turns: tuple[Turn, Turn] | None = None, *,
               final: Callable[[RunResult], bool] | None = None, graded_again_alone: str = "") -> RunResult:
    """Grade one cell into a staging folder and publish it as `<runs>/<run id>_regraded`, unless `final` says the
    result is not the cell's last word (it is returned, and the runs folder is left as it was);
    `graded_again_alone`: why this grading is a second one, alone on its GPU (recorded in the provenance)."""
    from kernelbench.eval.grade import grade_solution

    problem = job.opened
    assert problem is not None  # a cell with no problem folder is listed (no_problem), never graded
    mapping = [MappedConcept(**row.model_dump()) for row in problem.mapping()]
    with staged_run(runs_dir, job.run_id) as run:
        result = RunResult(run_id=job.run_id, harness=job.agent.harness, model=job.agent.model,
                           effort=job.agent.effort or None, deck=problem.deck,
                           problem=job.problem, gpu=gpu_key(settings.device), source=SOURCE,
                           session=Session(elapsed_s=job.cell.elapsed_seconds,
                                           tokens=Tokens(output=job.cell.output_tokens or 0),
                                           notes=["the agent's session ran on the published board; graded again here"]),
                           provenance=provenance_of(job, settings, problem.layout.name, mapping))
        assert result.provenance is not None  # given above
        result.provenance.graded_again_alone = graded_again_alone
        report = None
        if job.solution is None:
            result.grading = Grading(outcome=Outcome.NO_SOLUTION,
                                     reasons=[f"no solution file for {job.cell.run_id} in the solutions folder"])
        else:
            provenance = result.provenance
            assert provenance is not None  # given above
            try:
                report = _grade_copy(job, settings, turns, grade_solution, provenance)
            except Exception as exc:  # noqa: BLE001 - the grader could not grade this cell: its outcome, not fatal
                result.grading = Grading(has_solution=True, outcome=Outcome.HARNESS_ERROR,
                                         reasons=[f"grading aborted: {type(exc).__name__}: {exc}"[:2000]])
        if report is not None:
            result.grading, result.integrity, result.environment = report.grading, report.integrity, \
                report.environment
            result.gpu = gpu_key(settings.device, measured=report.environment.gpu_key)
            settings.gpu = settings.gpu or result.gpu
            run.write_grade_logs(report.check_log, report.benchmark_log)
        else:  # nothing was graded: filed under the GPU the other cells were graded on, else this machine's
            result.gpu = gpu_key(settings.device, expected=settings.gpu or this_gpu(settings.device))
        if settings.cancelled.is_set():
            raise KeyboardInterrupt
        if final is None or final(result):
            run.publish(result)
        return result


def this_gpu(device: str) -> str | None:
    """This machine's profile key (None: no profile matches it, or no GPU is asked for)."""
    if device != "cuda":
        return None
    from kernelbench.hardware import detect_profile

    profile = detect_profile()
    return profile.key if profile else None


def _grade_copy(job: CellJob, settings: CellSettings, turns: tuple[Turn, Turn] | None, grade_solution,
                provenance: Provenance):
    """The solution graded from a scratch folder set up as its authors had it (solution.py, its sidecars, the
    CUTLASS headers it includes: kernelbench.harness.rebuild, each step recorded in `provenance`); the folder
    goes away afterwards, so the run directory never holds its text."""
    import tempfile

    from kernelbench.eval.grading import scratch_dir
    from kernelbench.harness.rebuild import set_up

    assert job.solution is not None and job.opened is not None  # grade_cell grades a cell with both here
    timeline = settings.timeline
    with tempfile.TemporaryDirectory(prefix="kb-regrade-", dir=scratch_dir()) as tmp:
        timeline.stage(job, "set up as its authors had it")
        solution, adaptations, missing = set_up(job.solution, Path(tmp))
        provenance.adaptations = [a.what for a in adaptations]
        provenance.not_provided = missing
        return grade_solution(solution, job.opened, device=settings.device, shapes=settings.shapes,
                              limits=settings.limits, counters=settings.counters, sanitizer=settings.sanitizer,
                              timing=settings.timing,
                              exclusive=turns[0] if turns else None, beside=turns[1] if turns else None,
                              stage=lambda name, detail="": timeline.stage(job, name, detail))


# ------------------------------------------------------------------------------------------ their own scripts

@dataclass(frozen=True)
class TheirPass:
    """One of the published benchmark's own scripts run over graded cells, in a pass of its own: which script
    (`script_of`, `run`, kernelbench.harness.own_checker), the provenance field its result fills, and which cells
    want it."""

    label: str                               # "their checker", "their benchmark" (progress and messages)
    field: str                               # the Provenance field it fills
    script_of: Callable[[Problem], Any]      # the problem -> its OwnScript, or None
    run: Callable[..., Any]                  # run_own_checker or run_own_benchmark
    passed_only: bool                        # only cells that passed our checks (a failing one has no peak)

    def outcome(self, run) -> str:
        peak = getattr(run, "peak_fraction", None)
        return run.outcome if peak is None else f"{run.outcome}, peak {peak:.4f}"


def their_checker() -> TheirPass:
    from kernelbench.harness.own_checker import run_own_checker

    return TheirPass("their checker", "own_checker", Problem.own_checker, run_own_checker, passed_only=False)


def their_benchmark() -> TheirPass:
    from kernelbench.harness.own_checker import run_own_benchmark

    return TheirPass("their benchmark", "own_benchmark", Problem.own_benchmark, run_own_benchmark,
                     passed_only=True)


def wants_their_script(job: CellJob, runs_dir: Path, their: TheirPass) -> bool:
    """A graded cell with a solution, of a problem whose layout ships the script, with no result of it yet (and,
    for a pass that wants it, a cell that passed our checks)."""
    from kernelbench.results.run import load_result

    if job.solution is None or job.opened is None or not (runs_dir / job.run_id / RESULT_FILE).is_file():
        return False
    if their.script_of(job.opened) is None:
        return False
    try:
        result = load_result(runs_dir / job.run_id)
    except (KernelBenchError, ValueError):
        return False
    if result.provenance is None or getattr(result.provenance, their.field) is not None:
        return False
    return result.status == Status.PASS or not their.passed_only


def run_their_script(job: CellJob, settings: CellSettings, runs_dir: Path, their: TheirPass) -> str:
    """Their script over the cell's solution, set up as for the grading, its result recorded in the cell's
    result.json: that one field is set, the rest of the file left byte for byte as it was. Returns its outcome."""
    import tempfile

    from kernelbench.eval.grading import scratch_dir
    from kernelbench.harness.rebuild import set_up

    # wants_their_script chose the cell: a solution, a problem folder whose layout ships the script, a result
    # with provenance
    assert job.solution is not None and job.opened is not None
    script = their.script_of(job.opened)
    assert script is not None
    with tempfile.TemporaryDirectory(prefix=f"kb-{their.field.replace('_', '-')}-", dir=scratch_dir()) as tmp:
        solution_folder, scratch = Path(tmp) / "solution", Path(tmp) / "script"
        solution_folder.mkdir()
        scratch.mkdir()
        set_up(job.solution, solution_folder)
        settings.timeline.stage(job, their.label.replace("their ", "their own "))
        run = their.run(job.opened, script, solution_folder, settings.device, scratch)
    if settings.cancelled.is_set():
        raise KeyboardInterrupt
    replace_result_field(runs_dir / job.run_id, ("provenance", their.field), run)
    return their.outcome(run)


def with_their_script(cells: list[CellJob], settings: CellSettings, runs_dir: Path, slots: list[str | None],
                      per_gpu: int, deadline: float | None, their: TheirPass) -> None:
    """Their script over each of `cells` that wants it (`wants_their_script`), `per_gpu` at a time on each GPU,
    none started after `deadline` (time.monotonic()), in a pass of its own, never beside our measurements: their
    checker held a GPU's measuring lock for minutes inside a grading (their 06 checker draws its inputs on the
    host). Their checker measures nothing, so checkers may share a GPU as our correctness stages do; their
    benchmark measures, so it runs one a GPU."""
    from kernelbench.eval.process import on_gpu

    queue = [job for job in cells if wants_their_script(job, runs_dir, their)]

    def one(job: CellJob, gpu: str | None) -> str:
        with on_gpu(gpu):
            return run_their_script(job, settings, runs_dir, their)

    def ended(job: CellJob, future: Future) -> None:
        try:
            outcome = future.result()
        except KernelBenchError as exc:  # a cell's files, not the pass: the next cell goes on
            outcome = f"could not run: {exc}"
        settings.timeline.finish(job, f"{their.label}: {outcome}")

    spread_over_gpus(queue, slots, max(1, per_gpu), one, ended, settings, runs_dir, deadline)


# ------------------------------------------------------------------------------------------------ the board

def regrade_board(leaderboard: Path, solutions_dir: Path, deck_dir: Path, runs_dir: Path, *, device: str = "cuda",
                  shapes: str = "full", resume: bool = False, jobs: int = 1, gpus: list[str] | None = None,
                  stop_after: float | None = None,
                  limits: dict[str, float] | None = None, only: list[str] | None = None,
                  repository: str | None = None, commit: str | None = None, counters: bool = True,
                  timing: bool = True,
                  sanitizer: bool = False, own_checker: bool = False, own_benchmark: bool = False, progress=None,
                  timeline: CellTimeline | None = None, grade_elsewhere=None) -> RegradeReport:
    """Grade every cell not yet graded; see the module docstring. `grade_elsewhere(todo, settings, runs_dir,
    report, finished, stop_after)` grades the cells somewhere other than this machine's GPUs (a Ray cluster:
    kernelbench.harness.regrade_ray.regrade_board_on_ray)."""
    board = load_published_board(Path(leaderboard))
    for folder, what in ((solutions_dir, "solutions folder"), (deck_dir, "deck folder")):
        if not Path(folder).is_dir():
            raise KernelBenchError(f"no {what} here", path=folder)
    settings = CellSettings(board_name=Path(leaderboard).resolve().parent.name, hardware=board.hardware,
                            upstream=find_upstream(solutions_dir, repository, commit), device=device, shapes=shapes,
                            limits=dict(limits or {}), counters=counters and timing, timing=timing,
                            sanitizer=sanitizer,
                            timeline=timeline or CellTimeline())
    runs_dir = Path(runs_dir)
    cells = [j for j in plan_cells(board, solutions_dir, deck_dir) if not only or j.cell.run_id in only
             or j.problem in only]
    report = RegradeReport(board=settings.board_name, total=len(cells))
    report.no_problem = sorted({j.problem for j in cells if j.opened is None})
    report.no_solution = sorted(j.cell.run_id for j in cells if j.solution is None and j.opened is not None)
    finished = _finished(runs_dir, cells)
    if finished and not resume:
        raise KernelBenchError(f"{len(finished)} cells of this board are already graded in this runs folder",
                               path=runs_dir, hint="pass --resume to grade only the rest")
    remove_stale_staging(runs_dir) if runs_dir.is_dir() else None
    report.skipped = len(finished)
    settings.gpu = _earlier_gpu(runs_dir, finished)
    # cells without a solution file last: they are filed under the GPU the others were graded on; the rest in the
    # order `only` names them, so a plan can put its longest cells first, where a call's end cannot cut them
    todo = sorted((j for j in cells if j.run_id not in finished and j.opened is not None),
                  key=lambda j: (j.solution is None, named_at(j, only)))
    report.total -= sum(1 for j in cells if j.opened is None)
    if grade_elsewhere is not None:
        grade_elsewhere(todo, settings, runs_dir, report, finished, stop_after)
        return report
    slots = gpu_slots(device, gpus)
    deadline = None if stop_after is None else time.monotonic() + stop_after
    if own_checker:  # the cells an earlier call graded first, then the ones graded now
        with_their_script(cells, settings, runs_dir, slots, jobs, deadline, their_checker())
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    grade_cells(todo, settings, runs_dir, report, slots, jobs, left, progress)
    if own_checker:
        with_their_script(todo, settings, runs_dir, slots, jobs, deadline, their_checker())
    if own_benchmark:  # last, alone on each GPU: the cells graded earlier and now alike
        with_their_script(cells, settings, runs_dir, slots, 1, deadline, their_benchmark())
    return report


def named_at(job: CellJob, only: list[str] | None) -> int:
    """Where `only` names the cell (by its run id, else its problem); 0 for every cell when `only` is not given."""
    if not only:
        return 0
    for name in (job.cell.run_id, job.problem):
        if name in only:
            return only.index(name)
    return len(only)


def gpu_slots(device: str, gpus: list[str] | None) -> list[str | None]:
    """The GPUs the cells are spread over: `gpus` as given, else every GPU this process sees; on the CPU one slot."""
    if device != "cuda":
        return [None]
    from kernelbench.eval.process import visible_gpus

    chosen: list[str | None] = list(gpus) if gpus else list(visible_gpus())
    if not chosen:
        raise KernelBenchError("no GPU to regrade on: CUDA_VISIBLE_DEVICES is empty or nvidia-smi lists none",
                               hint="pass --gpus 0,1,... or --device cpu")
    return chosen


def _earlier_gpu(runs_dir: Path, finished: set[str]) -> str | None:
    from kernelbench.results.run import load_result

    for run_id in sorted(finished):
        try:
            result = load_result(runs_dir / run_id)
        except (KernelBenchError, ValueError):
            continue
        if result.grading.has_solution:
            return result.gpu
    return None


def _finished(runs_dir: Path, cells: list[CellJob]) -> set[str]:
    return {j.run_id for j in cells if (runs_dir / j.run_id / RESULT_FILE).is_file()}


class GpuNeighbours:
    """Which gradings had another grading on their GPU at some moment while they ran (a correctness stage of one
    beside the timing of the other is enough to take the memory the other needs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str | None, set[str]] = {}
        self._shared: set[str] = set()

    @contextmanager
    def grading(self, gpu: str | None, run_id: str) -> Iterator[None]:
        with self._lock:
            here = self._running.setdefault(gpu, set())
            here.add(run_id)
            if len(here) > 1:  # the newcomer and every grading under way there now share the GPU
                self._shared |= here
        try:
            yield
        finally:
            with self._lock:
                here.discard(run_id)

    def shared(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._shared


def out_of_memory_beside_another(result: RunResult, neighbours: GpuNeighbours) -> str | None:
    """The reason to grade a cell again alone: its grading did not pass cleanly, a reason reports running out of
    memory, and another grading shared its GPU meanwhile (None: its verdict stands). A timing stage out of memory
    leaves a PASS without the shape's time (BENCHMARK_FAILED), as much the neighbour's doing as a failed check."""
    if result.grading.outcome is Outcome.PASS or not neighbours.shared(result.run_id):
        return None
    return out_of_memory_reason(result)


def graded_again_note(reason: str, device: str) -> str:
    """The provenance line of a cell graded again alone, in the run page's words."""
    where = "GPU" if device == "cuda" else "device"
    return (f"Graded again alone on its {where}: its first grading ran out of memory while another grading shared "
            f"the {where}, which may have held the memory it lacked ({reason[:400]}). This grading, with no other on "
            f"the {where}, is the one kept.")


def grade_cells(todo: list[CellJob], settings: CellSettings, runs_dir: Path, report: RegradeReport,
                slots: list[str | None], jobs: int, stop_after: float | None, progress) -> None:
    """Grade every cell of `todo` into `report`: `jobs` at a time on each GPU of `slots`, the next cell to the GPU
    with the fewest under way; none is started once `stop_after` seconds have passed. A cell out of memory beside
    another grading (`out_of_memory_beside_another`) is held back and graded again after the queue, one grading a
    GPU: only then is nothing else on its GPU. Held back, it is not published, so a call that ends first leaves it
    to the next call's `--resume`, which grades it from the start. On any interruption the gradings under way are
    cancelled (`cancel_gradings`)."""
    deadline = None if stop_after is None else time.monotonic() + stop_after
    turns = {gpu: GpuTurns() for gpu in slots}  # one GPU's gradings take turns, GPUs do not
    neighbours = GpuNeighbours()
    held_back: dict[str, str] = {}  # run id -> the out-of-memory reason of its grading beside another

    def final(result: RunResult) -> bool:
        reason = out_of_memory_beside_another(result, neighbours)
        if reason is not None:
            held_back[result.run_id] = reason
        return reason is None

    def grade(job: CellJob, gpu: str | None) -> RunResult:
        if progress is not None:
            progress.start(job)
        with neighbours.grading(gpu, job.run_id):
            return grade_cell_on(gpu, job, settings, runs_dir, turns[gpu], final=final)

    def grade_alone(job: CellJob, gpu: str | None) -> RunResult:
        if progress is not None:
            progress.start(job)
        note = graded_again_note(held_back[job.run_id], settings.device)
        return grade_cell_on(gpu, job, settings, runs_dir, turns[gpu], graded_again_alone=note)

    def graded(job: CellJob, future: Future) -> None:
        result = future.result()
        settings.timeline.finish(job, result.status.value)
        report.graded.append(job.run_id)
        report.statuses[job.run_id] = result.status.value
        if progress is not None:
            progress.done(job, result)

    def graded_or_held_back(job: CellJob, future: Future) -> None:
        if job.run_id not in held_back:
            return graded(job, future)
        settings.timeline.finish(job, f"held back ({future.result().status.value}, out of memory beside another "
                                      "grading; graded again alone after the queue)")

    stopped = spread_over_gpus(todo, slots, max(1, jobs), grade, graded_or_held_back, settings, runs_dir, deadline)
    again = [job for job in todo if job.run_id in held_back]
    report.stopped = spread_over_gpus(again, slots, 1, grade_alone, graded, settings, runs_dir, deadline) or stopped


def spread_over_gpus(todo: list[CellJob], slots: list[str | None], per_gpu: int, work, ended, settings: CellSettings,
                     runs_dir: Path, deadline: float | None) -> bool:
    """`work(job, gpu)` for every job of `todo`, `per_gpu` at a time on each GPU of `slots`, the next job to the
    GPU with the fewest under way, and `ended(job, future)` as each one ends; none is started after `deadline`
    (time.monotonic()). On any interruption the works under way are cancelled (`cancel_gradings`). True when the
    deadline left jobs unstarted."""
    pending: dict[Future, tuple[CellJob, str | None]] = {}
    queue = list(todo)
    stopped = False
    with ThreadPoolExecutor(max_workers=per_gpu * len(slots), thread_name_prefix="regrade") as pool:
        try:
            while queue or pending:
                while queue and len(pending) < per_gpu * len(slots):
                    if deadline is not None and time.monotonic() >= deadline:
                        stopped = True  # the works under way still end, and are told
                        queue.clear()
                        break
                    gpu = least_busy(slots, [g for _, g in pending.values()])
                    job = queue.pop(0)
                    settings.timeline.start(job, gpu)
                    pending[pool.submit(work, job, gpu)] = (job, gpu)
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    ended(pending.pop(future)[0], future)
        except BaseException:
            cancel_gradings(settings, {f: job for f, (job, _) in pending.items()}, runs_dir)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return stopped


def least_busy(slots: list[str | None], busy: list[str | None]) -> str | None:
    """The slot with the fewest gradings under way (the first of those tied)."""
    return min(slots, key=lambda gpu: busy.count(gpu))


# how long a Ctrl-C waits for the gradings under way to return once their stages are being killed
CANCEL_GRACE_S = 20.0


def cancel_gradings(settings: CellSettings, pending: dict[Future, CellJob], runs_dir: Path) -> None:
    """Stop the gradings under way: their stage processes are killed (a signal reaches this thread only) until each
    grading has returned; each then throws its result away (settings.cancelled)."""
    from kernelbench.eval.process import kill_live_stages

    for line in settings.timeline.under_way():
        sys.stderr.write(f"cut short: {line}\n")
    settings.cancelled.set()
    for future in pending:
        future.cancel()
    deadline = time.monotonic() + CANCEL_GRACE_S
    while not all(f.done() for f in pending):
        kill_live_stages()
        wait(pending, timeout=0.2)
        if time.monotonic() > deadline:
            _abandon([job for future, job in pending.items() if not future.done()], runs_dir)


def _abandon(jobs: list[CellJob], runs_dir: Path) -> None:
    """A grading still running after its stages were killed for CANCEL_GRACE_S is blocked outside any stage, and
    its thread would also hold the interpreter's exit (the pool's threads are joined then): its staging folder goes
    and the process ends now, as a Ctrl-C asks."""
    for job in jobs:
        discard_staging(runs_dir, job.run_id)
    sys.stderr.write(f"interrupted: {len(jobs)} grading(s) did not stop within {CANCEL_GRACE_S:.0f} s; "
                     "their cells are thrown away\n")
    sys.stderr.flush()
    os._exit(130)
