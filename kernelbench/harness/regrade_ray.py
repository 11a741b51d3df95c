"""`kernelbench regrade --backend ray`: a board's cells spread over a Ray cluster, one cell a task holding one GPU
(one CPU for a CPU regrade), for boards larger than one machine can grade in the time at hand.

Each task is a whole `regrade_board` of its one cell on the node Ray placed it on (its GPU the one Ray gave it,
through CUDA_VISIBLE_DEVICES), into a private folder, with their checker and their timing script after it where
asked (alone on that GPU, as on one machine). A task's grading never shares its GPU, so the rule that grades a
cell out of memory beside another grading again alone (kernelbench.harness.regrade) has nothing to act on here.
The task returns the run directory packed; the driver brings it into the runs folder through the run-directory
writer (`backends.unpack_run`: staged, renamed into place, a taken name kept aside), so an interrupted regrade
leaves the runs folder as it was and `--resume` carries on.

The board, the solutions and the deck are read by path on every node: give every node the same copy at the same
path (a shared file system, or the same checkout everywhere), as sweeps on Ray do for their problems.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelbench.errors import KernelBenchError

if TYPE_CHECKING:
    from kernelbench.harness.regrade import RegradeReport


@dataclass(frozen=True)
class RayCell:
    """What a task needs to grade one cell: the board's files (by path, the same on every node) and the
    regrade's options; `run_id` is the published run id."""

    leaderboard: str
    solutions: str
    deck: str
    run_id: str
    device: str = "cuda"
    shapes: str = "full"
    limits: dict[str, float] = field(default_factory=dict)
    repository: str | None = None
    commit: str | None = None
    counters: bool = True
    timing: bool = True
    sanitizer: bool = False
    own_checker: bool = False
    own_benchmark: bool = False


def grade_cell_packed(cell: dict[str, Any]) -> tuple[str, str | None, bytes | None, str]:
    """The Ray task: one cell graded by `regrade_board` into a private folder. Returns (our run id, its status,
    the run directory as a gzipped tar, an error line); no archive where nothing was graded."""
    from kernelbench.harness.regrade import regrade_board

    spec = RayCell(**cell)
    with tempfile.TemporaryDirectory(prefix="kernelbench-regrade-") as tmp:
        runs = Path(tmp) / "runs"
        try:
            report = regrade_board(Path(spec.leaderboard), Path(spec.solutions), Path(spec.deck), runs,
                                   device=spec.device, shapes=spec.shapes, limits=spec.limits,
                                   only=[spec.run_id], repository=spec.repository, commit=spec.commit,
                                   counters=spec.counters, timing=spec.timing,
                                   sanitizer=spec.sanitizer,
                                   own_checker=spec.own_checker,
                                   own_benchmark=spec.own_benchmark)
        except KernelBenchError as exc:
            return spec.run_id, None, None, str(exc)
        if not report.graded:
            return spec.run_id, None, None, "the task found nothing to grade for this cell"
        ours = report.graded[0]
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(runs / ours, arcname=ours)
        return ours, report.statuses.get(ours), buffer.getvalue(), ""


def grade_cells_on_ray(cells: list[RayCell], runs_dir: Path, *, address: str | None = None,
                       stop_after: float | None = None, on_start=None,
                       on_done=None) -> tuple[dict[str, str], bool]:
    """Every cell of `cells` as a Ray task; each finished run brought into `runs_dir` as it ends. `on_start(run_id)`
    is told as each is submitted and `on_done(run_id, status_or_error)` as each ends. None is submitted once `stop_after` seconds have passed. Returns the
    statuses of the cells graded (our run id -> status) and whether the deadline left cells unsubmitted."""
    from kernelbench.harness.backends import connected_ray, unpack_run
    from kernelbench.harness.jobs import JobSummary

    ray = connected_ray(address)
    device = cells[0].device if cells else "cuda"
    options = {"num_gpus": 1} if device == "cuda" else {"num_cpus": 1}
    task = ray.remote(max_retries=0, **options)(grade_cell_packed)
    deadline = None if stop_after is None else time.monotonic() + stop_after
    queue: list[RayCell] = list(cells)
    in_flight: dict[Any, RayCell] = {}
    statuses: dict[str, str] = {}
    try:
        while queue or in_flight:
            while queue and (deadline is None or time.monotonic() < deadline):
                cell = queue.pop(0)
                in_flight[task.remote(asdict(cell))] = cell
                if on_start is not None:
                    on_start(cell.run_id)
            if not in_flight:
                break
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                cell = in_flight.pop(ref)
                outcome = _bring_home(ray, ref, runs_dir, unpack_run, JobSummary)
                if outcome[1] is not None:
                    statuses[outcome[0]] = outcome[1]
                if on_done is not None:
                    on_done(cell.run_id, outcome[1] or f"error: {outcome[2]}")
    except KeyboardInterrupt:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        raise
    return statuses, bool(queue)


def _bring_home(ray, ref, runs_dir: Path, unpack_run, summary_model) -> tuple[str, str | None, str]:
    """A finished task's run, unpacked into the runs folder; (our run id, status or None, error line)."""
    try:
        ours, status, archive, error = ray.get(ref)
    except Exception as exc:  # a task that died is that cell's error; the next cells go on
        return "", None, f"ray task failed: {type(exc).__name__}: {exc}"[:2000]
    if archive is None:
        return ours, None, error
    summary = unpack_run(summary_model(run_id=ours, status=status or "ERR"), archive, Path(runs_dir))
    if summary.error:
        return ours, None, summary.error
    return ours, status, ""


def regrade_board_on_ray(leaderboard: Path, solutions_dir: Path, deck_dir: Path, runs_dir: Path, *,
                         address: str | None = None, **options) -> RegradeReport:
    """`regrade_board` with the cells graded on a Ray cluster: the cells with a solution, one Ray task each (their
    checker and timing script in the same task, for the cells graded then: the cells an earlier call graded get
    theirs from a regrade on one machine); then the cells without a solution file, here, filed under the GPU the
    others were graded on."""
    from kernelbench.harness.regrade import _earlier_gpu, grade_cells, regrade_board

    calls = {"leaderboard": str(Path(leaderboard).resolve()), "solutions": str(Path(solutions_dir).resolve()),
             "deck": str(Path(deck_dir).resolve()), "repository": options.get("repository"),
             "commit": options.get("commit"), "own_checker": options.get("own_checker", False),
             "own_benchmark": options.get("own_benchmark", False)}

    def on_ray(todo, settings, runs_dir, report, finished, stop_after) -> None:
        by_run_id = {job.cell.run_id: job for job in todo}
        cells = [RayCell(run_id=job.cell.run_id, device=settings.device, shapes=settings.shapes,
                         limits=dict(settings.limits), counters=settings.counters, timing=settings.timing,
                         sanitizer=settings.sanitizer, **calls)
                 for job in todo if job.solution is not None]
        statuses, report.stopped = grade_cells_on_ray(
            cells, runs_dir, address=address, stop_after=stop_after,
            on_start=lambda run_id: settings.timeline.start(by_run_id[run_id], None),
            on_done=lambda run_id, status: settings.timeline.finish(by_run_id[run_id], status))
        report.graded += list(statuses)
        report.statuses.update(statuses)
        if report.stopped:
            return
        settings.gpu = _earlier_gpu(runs_dir, finished | set(statuses)) or settings.gpu
        grade_cells([job for job in todo if job.solution is None], settings, runs_dir, report, [None], 1, None,
                    None)

    return regrade_board(leaderboard, solutions_dir, deck_dir, runs_dir, grade_elsewhere=on_ray, **options)
