"""`tests/integrity/cases.yaml`: the red-team manifest. Each entry is one adversarial (or bad-input) solution
aimed at a real problem of the deck, with the outcome it must get and the finding that names why."""

from __future__ import annotations

import fnmatch
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
    # graded on the GPU with the hardware-counter pass on, as every real grading is: the pass is what sees it
    # (benchmarks/integrity_gpu.py turns the pass off elsewhere, where it would only serialise the gradings)
    counters: bool = False

    def expectation(self, device: str) -> Expectation:
        return self.gpu_expect if device == "cuda" and self.gpu_expect else self.expect


class DeckLineAllowance(Strict):
    """What a line of the deck (its reference.py or sota.py, graded as a candidate) may be reported for beyond
    class 1, its own use of the libraries the problem forbids, and why that report is right."""
    problem: str
    line: str                            # reference | sota
    classes: list[int] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list)  # guards whose error findings are right here (e.g. fp8_sass)
    # check cases it may fail: labels of the report, `*` for what varies (property draws: property:absorb@*)
    failed_cases: list[str] = Field(default_factory=list)
    why: str


class AcceptedRoute(Strict):
    """A solution under tests/integrity/accepted/ that looks like a trick but meets what its problem asks: it must
    PASS with no error finding (tests/integrity/accepted/README.md says why each is accepted)."""
    file: str
    problem: str
    cpu: bool = True                     # graded in CI (CPU smoke shapes)
    gpu: bool = True                     # graded by benchmarks/integrity_gpu.py
    why: str


class Suite(Strict):
    cases: list[SuiteCase]
    accepted: list[AcceptedRoute] = Field(default_factory=list)
    deck_lines: list[DeckLineAllowance] = Field(default_factory=list)

    def deck_allowance(self, problem: str, line: str) -> DeckLineAllowance | None:
        return next((a for a in self.deck_lines if (a.problem, a.line) == (problem, line)), None)


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


def deck_line_files(problems_root: Path) -> list[Path]:
    """Every problem's reference.py and sota.py: the deck's own lines, graded as candidates for false positives."""
    return sorted(p for p in Path(problems_root).glob("*/*.py")
                  if p.stem in ("reference", "sota") and (p.parent / "problem.yaml").is_file())


def judge_deck_line(report: dict[str, Any], allowed: DeckLineAllowance | None) -> list[str]:
    """False positives on a deck line: a finding other than class 1 (or its allowance), a failed check it is not
    allowed, an outcome other than pass/invalid, or an INVALID that no error finding explains. Empty = none."""
    grading = report.get("grading", {})
    classes = {1, *(allowed.classes if allowed else [])}
    patterns = allowed.failed_cases if allowed else []
    problems = []
    if grading.get("outcome") not in ("pass", "invalid"):
        problems.append(f"outcome {grading.get('outcome')!r}: {grading.get('reasons', [])[:2]}")
    errors = [f for f in report.get("integrity", []) if f.get("severity") == "error"]
    problems += [f"finding {f.get('check')}/class {f.get('class')}: {f.get('message', '')[:160]}"
                 for f in errors if f.get("class") not in classes
                 and f.get("check") not in (allowed.checks if allowed else [])]
    if grading.get("outcome") == "invalid" and not errors:
        problems.append(f"INVALID without an error finding: {grading.get('reasons', [])[:2]}")
    problems += [f"check {c.get('case')} on shape {c.get('shape_index')} failed: {c.get('message', '')[:160]}"
                 for c in grading.get("checks", []) if not c.get("passed")
                 and not any(fnmatch.fnmatchcase(str(c.get("case")), p) for p in patterns)]
    return problems
