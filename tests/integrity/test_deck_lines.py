"""No false positives on the deck's own lines: every problem's reference.py and sota.py graded as a candidate by the
real `kernelbench grade --device cpu --shapes smoke --json`.

They call the very libraries a candidate may not (that is what makes them the reference and the library line), so
class 1 findings are expected wherever they use a forbidden op; any other finding, or a failed check, is a false
positive of the grader unless it is listed in KNOWN with the reason its problem's README gives. About 15 gradings:
two to three minutes on a 2-core box.
"""

from __future__ import annotations

import ast
import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_suite import PARALLEL, REPO, grade  # the suite's grading call (tests/integrity is on sys.path)

pytestmark = pytest.mark.slow

LINES = sorted((p.parent.name, p.stem) for p in (REPO / "problems").glob("*/*.py")
               if p.stem in ("reference", "sota") and (p.parent / "problem.yaml").is_file())

# (problem, line) -> what the grader must report beyond class 1, and why it is right to.
KNOWN: dict[tuple[str, str], dict[str, Any]] = {
    ("04_kahan_softmax", "sota"): {
        "classes": {14},
        "failed_cases": {"stress:absorb", "property:absorb@0.001"},  # the CPU's sum misses the bound here
        "why": "torch.softmax sums without compensation: the library line is a speed line, not a Kahan softmax",
    },
    ("05_topk_bitonic", "sota"): {
        "failed_cases": {"stress:ties", "property:ties@-1"},
        "why": "torch.topk does not promise the tie order the problem requires (its README says so)",
    },
}


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
        futures = {(problem, line): pool.submit(grade, REPO / "problems" / problem / f"{line}.py", problem)
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
    grading = report.get("grading", {})
    known = KNOWN.get(key, {})
    assert grading.get("outcome") in ("pass", "invalid"), f"{key}: {grading.get('outcome')} " \
        f"{grading.get('reasons')} {report.get('stderr', '')[-800:]}"

    errors = [f for f in report.get("integrity", []) if f["severity"] == "error"]
    unexpected = [(f["check"], f["class"], f["message"][:160]) for f in errors
                  if f["class"] != 1 and f["class"] not in known.get("classes", set())]
    assert not unexpected, f"{key}: findings other than the line's own library use: {unexpected}"
    if grading["outcome"] == "invalid":
        assert errors, f"{key}: INVALID without an error finding: {grading.get('reasons')}"

    failed = {c["case"] for c in grading.get("checks", []) if not c["passed"]}
    assert failed <= known.get("failed_cases", set()), \
        f"{key}: checks failed: {[(c['case'], c['message'][:160]) for c in grading['checks'] if not c['passed']]}"


def test_lines_without_a_forbidden_op_pass_clean(line_reports):
    """The references that use no forbidden op are what an honest candidate could have written: they must PASS."""
    from kernelbench.eval.integrity.hooks import static_findings
    from kernelbench.problems.spec import load_problem_spec

    for (problem, line), report in line_reports.items():
        path = REPO / "problems" / problem / f"{line}.py"
        lint = [f for f in static_findings(path, load_problem_spec(path.parent)) if f.severity == "error"]
        if not lint and not KNOWN.get((problem, line)):
            assert report["grading"]["outcome"] == "pass", f"{problem}/{line}: {report['grading'].get('reasons')}"
