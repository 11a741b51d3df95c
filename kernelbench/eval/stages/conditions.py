"""The bench stage's GPU conditions on the grading: the whole stage's, and each timed shape's over the stretch of
its calls that the grader's pacer answered (kernelbench.eval.conditions has the sampler and the summaries)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelbench.eval.conditions import describe, not_measured

if TYPE_CHECKING:
    from kernelbench.base.models import ShapeResult
    from kernelbench.eval.grading import GradingPlan, GradingState
    from kernelbench.eval.pacing import PacedShape
    from kernelbench.eval.process import StageRun


def shape_stretch(paced: PacedShape) -> tuple[int, int] | None:
    """From the grader's first nonce of a shape to its last commitment (or last message) for that shape."""
    if not paced.calls:
        return None
    last = paced.calls[-1]
    return paced.calls[0].sent_ns, last.committed_ns or last.done_ns or last.sent_ns


def record_conditions(plan: GradingPlan, state: GradingState, run: StageRun,
                      retimed: list[ShapeResult] | None = None) -> None:
    """The bench stage's conditions on the grading (the whole stage) and on each timed shape (its paced calls),
    each logged; a shape timed under a thermal or power slowdown is flagged in the log. `retimed`: the shapes a
    second bench stage timed again (stages.timing.time_again), whose conditions are that stage's."""
    sampler = run.gpu
    results = state.grading.shapes if retimed is None else retimed
    if sampler is None:
        why = "the grading ran on the CPU" if plan.device != "cuda" else "the bench stage's GPU was not sampled"
        if retimed is None:
            state.grading.conditions = not_measured(why)
        for result in results:
            result.conditions = not_measured(why)
        return
    if retimed is None:
        state.grading.conditions = sampler.conditions()
        state.log.bench.append(f"GPU conditions, whole bench stage: {describe(state.grading.conditions)}")
    paced = run.pacer.shapes if run.pacer is not None else {}
    for result in results:
        stretch = shape_stretch(paced[result.index]) if result.index in paced else None
        if sampler.unavailable:
            result.conditions = not_measured(sampler.unavailable)
        elif stretch is None:
            result.conditions = not_measured("the shape's calls were not paced by the grader, so its samples "
                                             "cannot be told from the other shapes'")
        else:
            result.conditions = sampler.conditions(*stretch)
        state.log.bench.append(f"shape {result.index}: GPU conditions: {describe(result.conditions)}")
