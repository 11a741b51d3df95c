"""The red-team suite end to end: CPU-runnable cases of cases.yaml graded by the real `kernelbench grade
--device cpu --shapes smoke --json`, each caught with its named reason; the deck's honest solutions pass; the
problem files are untouched afterwards and gradings running beside the bad inputs are unaffected.

Every CPU case is graded end to end (37 gradings and the honest solutions: about 5 minutes on a 2-core box).
KB_INTEGRITY_QUICK=1 grades only the cases marked `ci` (every runtime guard and every bad input is among them) and
checks the lint-caught rest through the very lint the grader runs, for a quicker local loop. Gradings run a few at
a time, once per session; the per-case tests then read the reports.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.integrity_suite import SuiteCase, judge, load_suite

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUITE = load_suite(HERE / "cases.yaml")
FULL = os.environ.get("KB_INTEGRITY_QUICK") != "1"
CPU_CASES = [c for c in SUITE.cases if c.cpu and (FULL or c.ci)
             and (REPO / "problems" / c.problem / "problem.yaml").is_file()]
LINT_CASES = [c for c in SUITE.cases if c.expect.finding and "ast_lint" in c.expect.finding.check
              and (REPO / "problems" / c.problem / "problem.yaml").is_file()]
HONEST_PROBLEMS = ("04_kahan_softmax", "01_fp8_gemm")
HONEST = sorted(p for p in (REPO / "solutions" / "eager").glob("*.py")
                if (REPO / "problems" / p.stem).is_dir() and (FULL or p.stem in HONEST_PROBLEMS))
# solutions that take an unusual route the problem still accepts (accepted/README.md says why): they must PASS
ACCEPTED = {a.file: a.problem for a in SUITE.accepted if a.cpu}
PARALLEL = max(2, min(4, (os.cpu_count() or 2)))
GRADE_TIMEOUT_S = 900

pytestmark = pytest.mark.slow

API_GRADE = """
import json, sys
from pathlib import Path
from kernelbench.eval.grade import grade_solution
solution, problem, limits, held_out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "on"
report = grade_solution(Path(solution), Path(problem), device="cpu", shapes="smoke", limits=limits,
                        held_out=held_out)
sys.stdout.write(report.dump_json())
"""


def grade(solution: Path, problem: str, limits: dict[str, float] | None = None,
          held_out: bool = True) -> dict[str, Any]:
    """The real grader on CPU smoke shapes; stage limits go through the Python API. `held_out=False` turns the
    held-out stage off (`--held-out off`) where a test grades for another reason and reads no held-out result."""
    problem_dir = str(REPO / "problems" / problem)
    switch = "on" if held_out else "off"
    if limits:
        cmd = [sys.executable, "-c", API_GRADE, str(solution), problem_dir, json.dumps(limits), switch]
    else:
        cmd = [sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", problem_dir,
               "--device", "cpu", "--shapes", "smoke", "--json", "--held-out", switch]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S, cwd=REPO)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"grading": {"outcome": f"no report (exit {proc.returncode})"}, "integrity": [],
                "stderr": proc.stderr[-3000:]}


GRADED_FILES = {"problem.yaml", "reference.py", "sota.py", "PROMPT.txt"}  # what defines a problem


def problem_digest() -> dict[str, str]:
    folders = {REPO / "problems" / c.problem for c in CPU_CASES}
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in sorted(folders) for p in sorted(folder.rglob("*"))
            if p.name in GRADED_FILES}


@pytest.fixture(scope="session")
def reports() -> dict[str, dict[str, Any]]:
    before = problem_digest()
    # the cases and the honest solutions as every real grading runs them, held-out stage included (the honest
    # ones are checked right on it, and a bad input meets that stage too); an accepted route is checked for its
    # verdict alone
    jobs = {c.file: (HERE / "cases" / c.file, c.problem, c.limits or None) for c in CPU_CASES}
    jobs.update({f"honest:{p.name}": (p, p.stem, None) for p in HONEST})
    if FULL:
        jobs.update({f"accepted:{name}": (HERE / "accepted" / name, problem, None, False)
                     for name, problem in ACCEPTED.items()})
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {key: pool.submit(grade, *args) for key, args in jobs.items()}
        results = {key: f.result() for key, f in futures.items()}
    if os.environ.get("KB_INTEGRITY_REPORTS"):  # {case: caught} for the GPU table's CPU column
        caught = {c.file: not judge(c, results[c.file], "cpu") for c in CPU_CASES}
        Path(os.environ["KB_INTEGRITY_REPORTS"]).write_text(json.dumps(caught, indent=1))
    after = problem_digest()
    results["_problems_unchanged"] = {"changed": [p for p, h in before.items() if after.get(p) != h]}
    return results


def _explain(report: dict[str, Any]) -> str:
    g = report.get("grading", {})
    found = [(f["check"], f["class"], f["severity"], f["message"][:100]) for f in report.get("integrity", [])]
    return f"outcome={g.get('outcome')} reasons={g.get('reasons', [])[:2]} findings={found} " \
           f"{report.get('stderr', '')[-800:]}"


@pytest.mark.parametrize("case", CPU_CASES, ids=[c.file for c in CPU_CASES])
def test_case_is_caught(case: SuiteCase, reports):
    report = reports[case.file]
    problems = judge(case, report, "cpu")
    assert not problems, f"{case.file} ({case.why}): {problems}\n{_explain(report)}"


@pytest.mark.parametrize("solution", HONEST, ids=[p.name for p in HONEST])
def test_honest_solution_passes_without_findings(solution: Path, reports):
    report = reports[f"honest:{solution.name}"]
    errors = [f for f in report.get("integrity", []) if f["severity"] == "error"]
    assert report["grading"]["outcome"] == "pass" and not errors, _explain(report)
    # the deck's solutions are deterministic on the CPU: a repeat on the same inputs gives the same bits
    assert not [f for f in report.get("integrity", []) if f["check"] == "repeat_bitwise"], _explain(report)
    held = report["grading"].get("held_out") or {}  # an honest solution is right off the published grid too
    assert held.get("correct") is True, held.get("note", "no held-out result")


@pytest.mark.skipif(not FULL, reason="KB_INTEGRITY_QUICK=1 grades the cases marked ci only")
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_solution_passes_without_findings(name: str, reports):
    report = reports[f"accepted:{name}"]
    errors = [f for f in report.get("integrity", []) if f["severity"] == "error"]
    assert report["grading"]["outcome"] == "pass" and not errors, _explain(report)


def test_every_accepted_solution_names_its_problem():
    assert {p.name for p in (HERE / "accepted").glob("*.py")} == {a.file for a in SUITE.accepted}


def test_problem_files_unchanged_after_the_suite(reports):
    changed = reports["_problems_unchanged"]["changed"]
    assert not changed, f"files under problems/ changed during the suite: {changed}"


@pytest.mark.parametrize("case", LINT_CASES, ids=[c.file for c in LINT_CASES])
def test_lint_catches_its_cases(case: SuiteCase):
    """Every case whose expected finding is the lint's: the grader's own lint call names it."""
    from kernelbench.eval.integrity.hooks import load_guards
    from kernelbench.problems.loader import load_problem_spec

    found = load_guards().static_findings(HERE / "cases" / case.file, load_problem_spec(REPO / "problems" / case.problem))
    assert any(f.severity == "error" and f.klass == case.expect.finding.klass for f in found), found


def test_cases_cover_every_class():
    assert {c.klass for c in SUITE.cases if c.klass} == set(range(1, 17))
    assert len([c for c in SUITE.cases if c.klass]) >= 20
    for case in SUITE.cases:
        assert (HERE / "cases" / case.file).is_file(), case.file
