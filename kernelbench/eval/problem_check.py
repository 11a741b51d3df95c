"""`kernelbench problem check`: a problem is usable when its spec is valid, its reference passes its own grading
and a perturbed or degenerate output is rejected by the comparison (so the tolerance can fail at all).

It lives with the grader, not with the problems: it runs the grader on the problem's own reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelbench.problems.loader import bind_shape, init_arguments, shapes_for
from kernelbench.problems.problem import Problem, as_problem
from kernelbench.problems.spec import ProblemSpec


@dataclass
class CheckReport:
    problem: str
    passed: bool = True
    lines: list[str] = field(default_factory=list)

    def record(self, ok: bool, text: str) -> None:
        self.passed &= ok
        self.lines.append(f"{'ok  ' if ok else 'FAIL'} {text}")


def perturbations(expected: Any, tolerances: dict[str, Any]) -> dict[str, Any]:
    """Outputs that must fail: one element pushed far past the tolerance, and an all-zeros output."""
    import torch

    from kernelbench.eval.portable.compare import as_tuple, tolerance_for

    items = as_tuple(expected)
    if items is None:
        raise TypeError(f"the reference returned a {type(expected).__name__}, not tensors")
    single = isinstance(expected, torch.Tensor)

    def pack(values):
        return values[0] if single else tuple(values)

    bumped = []
    for t in items:
        t = t.clone()
        flat = t.view(-1)
        if flat.numel():
            atol, rtol = tolerance_for(t.dtype, tolerances)
            value = float(flat[flat.numel() // 2])
            bump = 100 * (atol + rtol * abs(value)) + 1.0
            flat[flat.numel() // 2] = value + bump if t.is_floating_point() else int(value) + 1
        bumped.append(t)
    return {"one element perturbed": pack(bumped), "all zeros": pack([torch.zeros_like(t) for t in items])}


def check_perturbations(ref: Any, spec: ProblemSpec, device: str, shape: dict[str, Any],
                        report: CheckReport) -> None:
    """`ref`: the problem's reference module (Problem.load_reference)."""
    import torch

    from kernelbench.eval.portable.compare import compare_outputs

    tolerances = {k: v.model_dump() for k, v in spec.tolerance.items()}
    torch.manual_seed(0)
    bind_shape(ref, shape)
    args, kwargs = init_arguments(ref, shape)
    model = ref.Model(*args, **kwargs).to(device).eval()
    inputs = ref.get_inputs(shape, 42, device)
    with torch.no_grad():
        expected = model(*inputs)
    hook = getattr(ref, "compare", None)
    for label, wrong in perturbations(expected, tolerances).items():
        result = compare_outputs(wrong, expected, tolerances)
        messages = result.messages or (list(hook(wrong, expected, inputs, tolerances) or []) if hook else [])
        report.record(bool(messages), f"{label} is rejected" + (f": {messages[0][:160]}" if messages else
                                                                 " — NOT rejected, the tolerance cannot fail"))


def check_problem(problem: Problem | Path, device: str = "cpu") -> CheckReport:
    from kernelbench.base.models import Outcome
    from kernelbench.eval.grade import grade_solution

    problem = as_problem(problem)
    reference = problem.load_reference()
    report = CheckReport(problem=problem.spec.id)
    report.record(True, f"spec valid, {problem.layout.name} layout ({len(problem.spec.shapes)} shapes, "
                        f"{len(problem.spec.smoke_shapes)} smoke shapes)")
    mode = "smoke" if device == "cpu" else "full"
    graded = grade_solution(problem.reference_file, problem, device=device, shapes=mode, lint=False, timing=False)
    g = graded.grading
    report.record(g.outcome is Outcome.PASS, f"reference passes its own check on {len(g.checks)} cases "
                  f"({mode} shapes): {g.outcome.value}" + (f" — {g.reasons[0][:300]}" if g.reasons else ""))
    for f in graded.integrity:
        report.record(f.severity != "error", f"finding on the reference: class {f.klass} {f.message} {f.evidence}")
    held = g.held_out
    if held is not None and g.outcome is Outcome.PASS:  # its declarations load and the reference runs on them
        report.record(held.correct is True, f"reference passes its held-out cases: {held.passed} of "
                      f"{len(held.checks)}" + (f" — {held.note[:300]}" if held.note else ""))
    check_perturbations(reference, problem.spec, device, shapes_for(problem.spec, mode)[0], report)
    return report
