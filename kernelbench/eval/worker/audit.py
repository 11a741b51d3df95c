"""Which timed calls a GPU grading records by kernel name: windows of consecutive calls, one in each stretch of the
timed loop, opening at calls drawn from the grading's secret seed (portable.timing.TimedAudit runs them)."""

from __future__ import annotations

import math
import random

from kernelbench.eval.protocol import BenchJob
from kernelbench.eval.worker.context import StageContext, launch_recorder

# Three windows of eight calls in the loop's first stretch, then one in every block of the same length after it.
# Eight calls: a candidate that computes honestly until several calls come back to back (a cadence sniff), slowed
# at a window's start or by a busy machine, is back to its timed route inside the window.
AUDIT_WINDOWS, AUDIT_WINDOW_CALLS = 3, 8


def audit_window_starts(rng: random.Random, shortest: int, max_calls: int) -> set[int]:
    """One window's first call in each block of the timed loop. The first AUDIT_WINDOWS blocks together are the
    loop's shortest length (`shortest` calls), so every call of a loop that stops there may be watched; the blocks
    go on to `max_calls`, so a candidate that changes after call 60, or 600, meets windows there too."""
    block = max(-(-shortest // AUDIT_WINDOWS), AUDIT_WINDOW_CALLS)
    return {b * block + rng.randrange(block - AUDIT_WINDOW_CALLS + 1) for b in range(-(-max_calls // block))}


def mix_rotation_seed(job: BenchJob, index: int) -> int | None:
    """The shape's rotation seed, from the grading's secret one (kernelbench.eval.stages.bench_job)."""
    return None if job.rotation_seed is None else job.rotation_seed * 1_000_003 + index


def timed_audit(ctx: StageContext, index: int, calls_per_base_call: float = 1.0):
    """The windows of timed calls a GPU grading records (portable.timing.TimedAudit): AUDIT_WINDOW_CALLS
    consecutive calls each, opening at trial-loop calls drawn from the grading's secret seed, one in each block of
    the loop (audit_window_starts), so every stretch of the timed loop may be the one watched.
    `calls_per_base_call`: the loop's calls per call on a base set (stress sets take turns with the base sets and
    give no sample), which sets the loop's shortest length."""
    from kernelbench.eval.portable.timing import TimedAudit

    job = ctx.job
    assert isinstance(job, BenchJob)
    trials = job.timing.trials
    max_trials = max(job.timing.max_trials or trials, trials)
    # the samples plus the audited calls (left out of the samples), with the stress calls between them
    shortest = math.ceil((trials + AUDIT_WINDOWS * AUDIT_WINDOW_CALLS) * calls_per_base_call)
    rng = random.Random(f"{mix_rotation_seed(job, index)}:audit")
    # far past any loop's end (a set of ints is cheap)
    starts = audit_window_starts(rng, shortest, 20 * math.ceil(max_trials * calls_per_base_call) + shortest)
    recorder, name = window_recorder(ctx)
    return TimedAudit(recorder, starts, AUDIT_WINDOW_CALLS, recorder_name=name)


def window_recorder(ctx: StageContext):
    """Kernel names through CUPTI directly (torch's profiler stays off and no trace function is set, so a candidate
    asking either is told the same in a recorded call as in another); where CUPTI cannot be used, torch's profiler
    with CUDA activity only (no aten recording: it would slow the window's calls enough for a cadence watcher to
    notice). Returns the recorder and its name, which the shape's result notes."""
    from kernelbench.eval.integrity.cupti_kernels import CuptiUnavailable, kernel_recorder

    try:
        return kernel_recorder().recording, "cupti"
    except (CuptiUnavailable, OSError) as exc:
        return (lambda: launch_recorder(ctx.device, True, ctx.problem_code(), kernels_only=True),
                f"torch profiler ({exc})")
