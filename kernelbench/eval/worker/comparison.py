"""One output judged: exact metadata, values within tolerance, the Kahan row-sum evidence, the problem's compare()
hook. The checked outputs (the judge) and the timed ones (the bench stage's TimedJudge) both go through
`Comparer.judge`, so a candidate that changes what it computes once timed meets the same checks there."""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kernelbench.base.models import Finding
from kernelbench.eval.cases import Case
from kernelbench.eval.failures import GuardFailed
from kernelbench.eval.portable.compare import Comparison, compare_outputs
from kernelbench.eval.protocol import ErrorSize, StageJob, TensorMeta
from kernelbench.problems.spec import IndexOutput


@dataclass
class Comparer:
    """What judging needs: torch, the device and tolerances of the job, the problem's reference module (its
    compare() hook) and the Kahan row-sum bound where the problem names one."""

    torch: ModuleType
    reference: ModuleType
    device: str
    kahan_bound: float | None
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    index_outputs: list[IndexOutput] = field(default_factory=list)

    @classmethod
    def for_job(cls, torch: ModuleType, reference: ModuleType, job: StageJob) -> Comparer:
        return cls(torch, reference, job.device, job.kahan_bound,
                   {k: v.model_dump() for k, v in job.tolerance.items()}, list(job.index_outputs))

    def tolerance_of(self, case: Case) -> dict[str, dict[str, float]]:
        """The tolerance a case is judged within: the problem's, with the case's own (a stress entry's) over it."""
        if not case.tolerance:
            return self.tolerance
        return {**self.tolerance, **{k: v.model_dump() for k, v in case.tolerance.items()}}

    def judge(self, case_id: str, out: Any, expected: Any, inputs: list | None, oracle: Any,
              meta: list[TensorMeta], tolerance: dict[str, dict[str, float]] | None = None,
              ) -> tuple[Comparison, list[Finding]]:
        tolerance = self.tolerance if tolerance is None else tolerance
        result = compare_outputs(out, expected, tolerance, inputs, self.index_outputs)
        # only an output right element by element can be blamed on its accumulation (NaN or wrong values are the
        # comparison's to report)
        kahan = self.kahan_evidence(case_id, out, oracle) if result.ok else []
        self.metadata(result, meta, expected)
        hook = getattr(self.reference, "compare", None)
        if result.ok and hook is not None:
            for message in hook(out, expected, inputs, tolerance) or []:
                result.fail(message)
        return result, kahan

    @property
    def selections(self) -> set[int]:
        """The outputs an index rule reads its values from (error_sizes)."""
        return {rule.values for rule in self.index_outputs}

    def kahan_evidence(self, case_id: str, out: Any, oracle: Any) -> list[Finding]:
        """The Kahan leak check: row sums of the candidate's output against the problem's bound, with what plain
        and compensated fp32 accumulation give on the same terms as evidence."""
        if self.kahan_bound is None or oracle is None or not isinstance(out, self.torch.Tensor):
            return []
        from kernelbench.eval.integrity.numerics import kahan_check

        try:
            return kahan_check(out, oracle, self.kahan_bound, case_id=case_id)
        except Exception as exc:  # the output passed the comparison: a failure here is the guard's
            raise GuardFailed("kahan_row_sum", exc) from exc

    def metadata(self, result: Comparison, meta: list[TensorMeta], expected: Any) -> None:
        exps = [expected] if isinstance(expected, self.torch.Tensor) else list(expected)
        for i, (info, e) in enumerate(zip(meta, exps)):
            if info.device != self.device:
                result.fail(f"output {i} is on {info.device}, expected {self.device}")
            if not info.dense and e.is_contiguous():
                result.fail(f"output {i} has overlapping strides {tuple(info.stride)} (a broadcast view), "
                            "expected a contiguous tensor")


def relative_rms(a, b) -> float:
    """rms(a - b) / rms(b) over the elements finite in both (where() rather than a boolean gather: no copies)."""
    import torch

    a64, b64 = a.double(), b.double()
    mask = torch.isfinite(a64) & torch.isfinite(b64)
    zero = a64.new_zeros(())
    denom = float(torch.where(mask, b64, zero).square().sum())
    return math.sqrt(float(torch.where(mask, a64 - b64, zero).square().sum()) / denom) if denom > 0 else 0.0


def error_sizes(out: Any, expected: Any, oracle: Any,
                selections: AbstractSet[int] = frozenset()) -> list[ErrorSize]:
    """Per floating output: the candidate's and the reference's rms error against the fp64 oracle. Outputs in
    `selections` are elements selected from an input (top-k's values, where the problem judges its indices by what
    they select): no arithmetic made them, so there is no precision to measure; which elements were selected is
    the comparison's to judge, within the problem's tolerance."""
    import torch

    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    exps = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    oras = [oracle] if isinstance(oracle, torch.Tensor) else list(oracle)
    sizes = []
    for i, (o, e, r) in enumerate(zip(outs, exps, oras)):
        if e.is_floating_point() and o.shape == r.shape and i not in selections:
            sizes.append(ErrorSize(output=i, candidate=relative_rms(o, r), reference=relative_rms(e, r),
                                   eps=torch.finfo(e.dtype).eps))
    return sizes
