"""Integrity guards: static lint, launch audit, compiled-code (SASS) checks, numeric checks, counters, templates.

The grader (kernelbench.eval) calls these through `kernelbench.eval.integrity.hooks`; each guard returns a list
of `kernelbench.results.run.Finding` (severity "error" makes the run INVALID).
"""

from kernelbench.eval.integrity.catalogue import CLASS_NAMES, finding, has_errors
from kernelbench.eval.integrity.launches import launch_audit
from kernelbench.eval.integrity.lint import lint_solution, lint_source
from kernelbench.eval.integrity.numerics import kahan_check
from kernelbench.eval.integrity.sass import collect_sass, fp8_sass_check
from kernelbench.eval.integrity.templates import snapshot, template_findings

__all__ = [
           "CLASS_NAMES",
           "collect_sass",
           "finding",
           "fp8_sass_check",
           "has_errors",
           "kahan_check",
           "launch_audit",
           "lint_solution",
           "lint_source",
           "snapshot",
           "template_findings",
]
