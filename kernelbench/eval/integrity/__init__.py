"""Integrity guards: static lint, launch audit, compiled-code (SASS) checks, numeric checks, counters, templates.

The grader (kernelbench.eval) calls these through the names below; each returns a list of
`kernelbench.results.run.Finding` (severity "error" makes the run INVALID).
"""

from kernelbench.eval.integrity.catalogue import CLASS_NAMES, finding, has_errors
from kernelbench.eval.integrity.launches import launch_audit
from kernelbench.eval.integrity.lint import lint_solution, lint_source

__all__ = ["CLASS_NAMES", "finding", "has_errors", "launch_audit", "lint_solution", "lint_source"]
