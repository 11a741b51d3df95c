"""Integrity guards: static lint, launch audit, compiled-code (SASS) checks, numeric checks, counters, templates,
and the runtime guards of the candidate's own process (namespace watch, introspection refusal).

The grader reaches the parent-side guards through one surface, `kernelbench.eval.integrity.hooks`, loaded once
per grading (a guard that cannot load makes the grading a harness error). Each guard returns a list of
`kernelbench.base.models.Finding` (severity "error" makes the run INVALID). This package module imports nothing,
so importing one guard never imports the others.
"""
