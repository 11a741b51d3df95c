"""`tests/integrity/cases.yaml`: the red-team manifest. Each entry is one adversarial (or bad-input) solution
aimed at a real problem of the deck, with the outcome it must get and the finding that names why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.fileio import load_yaml_model


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ExpectedFinding(Strict):
    check: list[str]                     # any of these guards may name it
    klass: int = Field(alias="class", ge=1, le=16)


class Expectation(Strict):
    outcome: list[str]                   # any of these outcomes counts as caught
    finding: ExpectedFinding | None = None
    reason: str = ""                     # substring of the grading's reasons (e.g. a stage time limit)


class SuiteCase(Strict):
    file: str
    problem: str
    klass: int | None = Field(None, alias="class", ge=1, le=16)  # None: a bad input, not an exploit class
    why: str
    cpu: bool                            # runnable in CI with --device cpu --shapes smoke
    gpu: bool = True                     # run by benchmarks/integrity_gpu.py on the H100
    ci: bool = False                     # in the quick subset (KB_INTEGRITY_QUICK=1); CI grades every case
    expect: Expectation
    gpu_expect: Expectation | None = None
    limits: dict[str, float] = Field(default_factory=dict)  # per-stage time limits (the hang case)

    def expectation(self, device: str) -> Expectation:
        return self.gpu_expect if device == "cuda" and self.gpu_expect else self.expect


class Suite(Strict):
    cases: list[SuiteCase]


def load_suite(path: Path) -> Suite:
    return load_yaml_model(Path(path), Suite)


def judge(case: SuiteCase, report: dict[str, Any], device: str) -> list[str]:
    """What is wrong with a grading report (GradeReport JSON) against the case's expectation; empty = caught."""
    want = case.expectation(device)
    grading = report.get("grading", {})
    problems = []
    if grading.get("outcome") not in want.outcome:
        problems.append(f"outcome {grading.get('outcome')!r}, expected one of {want.outcome}")
    if want.finding is not None:
        hits = [f for f in report.get("integrity", []) if f.get("severity") == "error"
                and f.get("check") in want.finding.check and f.get("class") == want.finding.klass]
        if not hits:
            got = sorted({(f.get("check"), f.get("class")) for f in report.get("integrity", [])
                          if f.get("severity") == "error"})
            problems.append(f"no error finding {want.finding.check}/class {want.finding.klass}; got {got}")
    if want.reason and not any(want.reason in r for r in grading.get("reasons", [])):
        problems.append(f"no reason mentioning {want.reason!r} in {grading.get('reasons')}")
    return problems
