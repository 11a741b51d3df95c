"""Every timed output validated, inside the bench stage, against the candidate's checked output of the same case
(which the judge has passed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelbench.base.models import Finding
from kernelbench.eval.cases import Case
from kernelbench.eval.protocol import BenchJob
from kernelbench.eval.worker.comparison import Comparer, relative_rms
from kernelbench.eval.worker.context import StageContext, tensors_of


class TimedJudge:
    """Validates every timed output. A candidate grading's (`judge_timed`) goes through the judge's own comparison
    (`Comparer.judge`: tolerance, exact metadata, the Kahan row-sum evidence, the problem's compare() hook with
    pristine inputs) against the candidate's checked output of the same case; the library lines timed for
    baselines keep the plain tolerance (their checks are not the judge's). Kahan findings of a failed timed call
    are kept for the report."""

    def __init__(self, ctx: StageContext, cases: list[Case], input_sets: list[list]):
        from kernelbench.eval.tensorfile import load_output

        job = ctx.job
        assert isinstance(job, BenchJob)
        self.torch, self.cases = ctx.torch, cases
        self.findings: list[Finding] = []
        self.expected = [load_output(Path(job.expected_dir) / f"{job.expected_prefix}_{c.id}.kbt", ctx.device)
                         for c in cases]
        self.full = job.judge_timed
        self.comparer = Comparer.for_job(ctx.torch, ctx.reference, job)
        self.sizes = job.error_sizes
        self.pristine: list[list | None] = [None] * len(cases)
        # the compare() hook and the index rule read inputs a call may edit
        if self.full and (callable(getattr(ctx.reference, "compare", None)) or self.comparer.index_outputs):
            from kernelbench.eval.portable.guards import clone_inputs

            self.pristine = [clone_inputs(s) for s in input_sets]

    def __call__(self, out: Any, k: int) -> list[str]:
        if not self.full:
            from kernelbench.eval.portable.compare import compare_outputs

            return compare_outputs(out, self.expected[k], self.comparer.tolerance_of(self.cases[k]), self.pristine[k],
                                   self.comparer.index_outputs).messages
        from kernelbench.eval.integrity.profiling import unrecorded

        with unrecorded():  # the grader's checks are not the candidate's launches
            return self.judge(out, k)

    def judge(self, out: Any, k: int) -> list[str]:
        from kernelbench.eval.tensorfile import tensor_meta

        case_id = f"{self.cases[k].id} (timed call)"
        meta = [tensor_meta(t) for t in tensors_of(self.torch, out) if type(t) is self.torch.Tensor]
        # the checked output stands in for the fp64 oracle: the evidence only recovers the row's terms from it
        result, kahan = self.comparer.judge(case_id, out, self.expected[k], self.pristine[k], self.expected[k], meta,
                                            self.comparer.tolerance_of(self.cases[k]))
        kahan += self.precision(out, k) if result.ok else []
        self.findings += kahan
        messages = result.messages + [f"{f.check}: {f.message} ({f.evidence})" for f in kahan]
        label = self.cases[k].label
        return [f"[{label}] {m}" for m in messages] if label != "base" and messages else messages

    def precision(self, out: Any, k: int) -> list[Finding]:
        """The check stage's error-size detector, for the timed calls of a case the judge measured against its fp64
        oracle: the timed output's distance from the checked one, less the checked output's own error, is a lower
        bound on the timed output's error; held to the detector's limits, it tells a call that drops precision
        once timed (the timed stage holds no oracle: it would be the answer)."""
        sizes = self.sizes.get(self.cases[k].id)
        if not sizes:
            return []
        from kernelbench.eval.verdict import error_size_findings

        outs, exps = tensors_of(self.torch, out), tensors_of(self.torch, self.expected[k])
        label = (f"{self.cases[k].id} (timed call; its error bounded below by its distance from the checked "
                 "output)")
        found = []
        for size in sizes:
            bound = max(0.0, relative_rms(outs[size.output], exps[size.output]) - size.candidate)
            found += [f for f in error_size_findings(label, size.model_copy(update={"candidate": bound}))
                      if f.severity == "error"]
        return found
