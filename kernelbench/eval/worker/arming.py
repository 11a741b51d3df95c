"""The candidate stages' own guards, armed before any solution code is imported, and what they saw.

- the namespace watch (kernelbench.eval.integrity.namespaces): a snapshot of the grader's code and the library
  functions it calls, taken once every module the stage runs beside the candidate is imported; the stage reports
  what changed by its end (class 11);
- the introspection guard (kernelbench.eval.integrity.introspection): an audit hook refusing the solution's reach
  for frames and live objects (class 8);
- compiled-kernel names (kernelbench.eval.integrity.compiled): torch.compile names its generated kernels after the
  traced graph's torch calls, so a forbidden call laundered through it keeps its name (class 1).

A guard that cannot be armed fails the stage before the candidate is imported: the grading is a harness error.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from kernelbench.eval.integrity.compiled import name_kernels_after_torch_calls
from kernelbench.eval.integrity.introspection import IntrospectionGuard
from kernelbench.eval.integrity.namespaces import NamespaceWatch
from kernelbench.eval.protocol import CandidateReport

# what the check and bench stages run beside a candidate, imported before it so the watch covers them
GRADER_MODULES = ("kernelbench.eval.portable.timing", "kernelbench.eval.portable.guards",
                  "kernelbench.eval.portable.compare", "kernelbench.eval.portable.fresh", "kernelbench.eval.tensorfile",
                  "kernelbench.eval.protocol", "kernelbench.eval.verdict", "kernelbench.eval.worker.context",
                  "kernelbench.eval.worker.comparison", "kernelbench.eval.worker.timed_judge",
                  "kernelbench.eval.worker.audit", "kernelbench.eval.worker.check", "kernelbench.eval.worker.bench",
                  "kernelbench.eval.integrity.profiling", "kernelbench.eval.integrity.cupti_kernels")


@dataclass
class CandidateGuards:
    watch: NamespaceWatch
    introspection: IntrospectionGuard

    def report(self) -> CandidateReport:
        return CandidateReport(namespace_changes=self.watch.changes(), introspection=list(self.introspection.refused))

    def refused(self) -> list[str]:
        return list(self.introspection.refused)


def arm(modules: list[str]) -> CandidateGuards:
    """Every guard of the candidate's process, in place before `modules` (the solution files) are imported."""
    watch = watch_grader_namespaces()
    introspection = guard_introspection(modules)
    name_kernels_after_torch_calls()
    return CandidateGuards(watch, introspection)


def guard_introspection(modules: list[str]) -> IntrospectionGuard:
    """The audit hook, for the code under the folders of the solution files (and their sidecars)."""
    roots = sorted({str(Path(m).resolve().parent) + os.sep for m in modules if m})
    guard = IntrospectionGuard(tuple(roots))
    guard.install()
    return guard


def watch_grader_namespaces() -> NamespaceWatch:
    for name in GRADER_MODULES:
        importlib.import_module(name)
    return NamespaceWatch.take()
