"""No false positives on the deck's own lines: every problem's reference.py and sota.py graded as a candidate by the
real `kernelbench grade --device cpu --shapes smoke --json`.

They call the very libraries a candidate may not (that is what makes them the reference and the library line), so
class 1 findings are expected wherever they use a forbidden op; any other finding, or a failed check, is a false
positive of the grader unless the `deck_lines` of cases.yaml allow it, with the reason its problem's README gives.
About 15 gradings: one to three minutes on a 2-core box.
"""

from __future__ import annotations

import ast
import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_suite import PARALLEL, REPO, grade  # the suite's grading call (tests/integrity is on sys.path)

from tests.support.integrity_suite import deck_line_files, judge_deck_line, load_suite

pytestmark = pytest.mark.slow

LINES = [(p.parent.name, p.stem) for p in deck_line_files(REPO / "problems")]

SUITE = load_suite(Path(__file__).resolve().parent / "cases.yaml")


def missing_imports(path: Path) -> list[str]:
    """Top-level modules the file imports that this machine lacks (fla has no CPU build)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


@pytest.fixture(scope="module")
def line_reports() -> dict[tuple[str, str], dict[str, Any]]:
    with ThreadPoolExecutor(PARALLEL) as pool:
        # held-out off: these tests read the verdict, findings and checks of the published cases alone
        futures = {(problem, line): pool.submit(grade, REPO / "problems" / problem / f"{line}.py", problem,
                                                held_out=False)
                   for problem, line in LINES
                   if not missing_imports(REPO / "problems" / problem / f"{line}.py")}
        return {key: f.result() for key, f in futures.items()}


def test_every_problem_has_its_reference_line():
    problems = {p.name for p in (REPO / "problems").iterdir() if (p / "problem.yaml").is_file()}
    assert {problem for problem, line in LINES if line == "reference"} == problems


@pytest.mark.parametrize("key", LINES, ids=[f"{p}/{line}" for p, line in LINES])
def test_deck_line_has_no_false_positive(key: tuple[str, str], line_reports):
    missing = missing_imports(REPO / "problems" / key[0] / f"{key[1]}.py")
    if missing:
        pytest.skip(f"{key[0]}/{key[1]} imports {missing}, not installed here; it runs on the GPU machine")
    report = line_reports[key]
    problems = judge_deck_line(report, SUITE.deck_allowance(*key))
    assert not problems, f"{key[0]}/{key[1]}: {problems} {report.get('stderr', '')[-800:]}"


def test_judge_names_each_false_positive():
    """The judge itself: a clean report passes; an unexpected class, a failed check, a crash are named."""
    allowed = SUITE.deck_allowance("05_topk_bitonic", "sota")
    clean = {"grading": {"outcome": "invalid", "checks": [{"case": "stress:ties", "passed": False}]},
             "integrity": [{"check": "ast_lint", "class": 1, "severity": "error", "message": "torch.topk"}]}
    assert judge_deck_line(clean, allowed) == []
    assert judge_deck_line(clean, None)  # the ties failure is allowed only where listed
    drawn = {"grading": {"outcome": "invalid", "checks": [{"case": "property:ties@0.5", "passed": False}]},
             "integrity": []}
    assert judge_deck_line({**drawn, "integrity": clean["integrity"]}, allowed) == []  # any drawn scale
    flagged = {"grading": {"outcome": "invalid", "checks": [{"case": "base", "passed": False, "message": "x"}]},
               "integrity": [{"check": "timed_output", "class": 8, "severity": "error", "message": "m"}]}
    assert len(judge_deck_line(flagged, allowed)) == 2
    assert judge_deck_line({"grading": {"outcome": "check_failed"}, "integrity": []}, None)


def test_an_allowed_check_is_allowed_for_its_line_only():
    """01's lines may be reported by the FP8 SASS check (the oracle is float32; cuBLASLt's kernels have no code to
    read); another class-14 guard on them, or that check on another line, is still a false positive."""
    sass = {"check": "fp8_sass", "class": 14, "severity": "error", "message": "not shown"}
    report = {"grading": {"outcome": "invalid", "checks": []}, "integrity": [sass]}
    assert judge_deck_line(report, SUITE.deck_allowance("01_fp8_gemm", "sota")) == []
    assert judge_deck_line(report, SUITE.deck_allowance("07_w4a16_gemm", "reference"))
    kahan = {**report, "integrity": [{**sass, "check": "kahan_row_sum"}]}
    assert judge_deck_line(kahan, SUITE.deck_allowance("01_fp8_gemm", "sota"))


def test_lines_without_a_forbidden_op_pass_clean(line_reports):
    """The lines that use no forbidden op are what an honest candidate could have written: they must PASS, but for
    one finding a reference graded as a candidate must get: its functions are the reference's own, recognised
    running inside the forward wherever they were loaded from (class 1, `python::reference.py:...`)."""
    from kernelbench.eval.integrity.hooks import load_guards
    from kernelbench.problems.loader import load_problem_spec

    for (problem, line), report in line_reports.items():
        path = REPO / "problems" / problem / f"{line}.py"
        lint = [f for f in load_guards().static_findings(path, load_problem_spec(path.parent))
                if f.severity == "error" or f.message.startswith("lead: ")]  # a forbidden op, as a lead or a verdict
        if lint or SUITE.deck_allowance(problem, line):
            continue
        errors = [f for f in report["integrity"] if f["severity"] == "error"
                  and not (line == "reference" and f["check"] == "launch_audit" and "python::reference.py" in
                           (f.get("evidence") or ""))]
        assert not errors and all(c["passed"] for c in report["grading"]["checks"]), \
            f"{problem}/{line}: {report['grading'].get('reasons')}"
        assert report["grading"]["outcome"] in ("pass", "invalid" if line == "reference" else "pass")
