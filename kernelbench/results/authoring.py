"""The auditor's loop: start an annotation from a run (`new`) and verify them all (`check`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.fileio import read_text
from kernelbench.results.annotation import Annotation, Quote, Verdict
from kernelbench.results.dataset import Dataset, QuoteState, file_lines
from kernelbench.results.run import RESULT_FILE, load_result
from kernelbench.results.yamlout import dump_annotation, write_new_file

TODO = "TODO"
SUMMARY_SKELETON = f"{TODO}: one paragraph on what the solution does and why the verdict."
IMPLICATION_SKELETON = f"{TODO}: what this means for the score."
LABEL_SKELETON = f"{TODO}: what these lines show"
_QUOTE_ARG = re.compile(r"^(?P<file>.+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


# --------------------------------------------------------------------------------------------- new

def parse_quote_arg(text: str) -> tuple[str, int, int]:
    """'solution.py:12-20' (or 'solution.py:12') → (file, first, last)."""
    match = _QUOTE_ARG.match(text)
    if not match:
        raise KernelBenchError(f"cannot read quote '{text}'", hint="write FILE:FIRST-LAST, e.g. solution.py:12-20")
    first = int(match.group("first"))
    last = int(match.group("last") or first)
    if first < 1 or last < first:
        raise KernelBenchError(f"quote '{text}' has lines out of order", hint="use FIRST-LAST with 1 <= FIRST <= LAST")
    return match.group("file"), first, last


def quote_from_run(run_dir: Path, spec: str) -> Quote:
    """A Quote whose text is copied verbatim from the run's file."""
    name, first, last = parse_quote_arg(spec)
    path = (run_dir / name).resolve()
    if not path.is_relative_to(run_dir.resolve()) or not path.is_file():
        raise KernelBenchError(f"'{name}' is not a file of the run", path=run_dir,
                               hint="quote a file inside the run directory, e.g. solution.py or check.log")
    text = read_text(path)
    segment = file_lines(text, first, last)
    if segment is None:
        raise KernelBenchError(f"{name} has only {len(text.splitlines())} lines, not {last}", path=path,
                               hint="pick lines that exist")
    return Quote(file=name, lines=[first, last], label=LABEL_SKELETON, text=segment)


def new_annotation(run_id: str, verdict: Verdict | str, runs_dir: Path, annotations_dir: Path,
                   quotes: Sequence[str] = (), summary: str | None = None,
                   implication: str | None = None) -> Path:
    """Write `annotations/<run_id>.yaml` as a skeleton filled from the run; never overwrites."""
    run_dir = Path(runs_dir) / run_id
    if not (run_dir / RESULT_FILE).is_file():
        raise KernelBenchError(f"no run '{run_id}' here", path=run_dir,
                               hint="check the run id (ls runs/) or pass --runs DIR")
    result = load_result(run_dir)
    verdict = Verdict(verdict)
    annotation = Annotation(
        run_id=run_id, model=result.model, harness=result.harness, effort=result.effort, problem=result.problem,
        peak_fraction=result.grading.peak_fraction, verdict=verdict, summary=summary or SUMMARY_SKELETON,
        quotes=[quote_from_run(run_dir, q) for q in quotes],
        implication=implication or (None if verdict is Verdict.CLEAN else IMPLICATION_SKELETON))
    path = Path(annotations_dir) / f"{run_id}.yaml"
    write_new_file(path, dump_annotation(annotation, path))
    return path


# --------------------------------------------------------------------------------------------- check

@dataclass
class CheckReport:
    """Result of checking every annotation: counts by quote state and every problem found."""

    annotations: int
    quotes: dict[str, int]
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def check_annotations(dataset: Dataset, annotation_dir: Path | None = None) -> CheckReport:
    """Diagnostics of the annotation files (and writeups) of a loaded dataset, plus unfilled skeleton text."""
    annotation_dir = Path(annotation_dir) if annotation_dir else Path(dataset.data_dir) / "annotations"
    diagnostics = [d for d in dataset.diagnostics if _under(d.path, annotation_dir)]
    quotes: dict[str, int] = {state.value: 0 for state in QuoteState}
    for record in dataset.annotations.values():
        for check in record.quote_checks:
            quotes[check.state.value] += 1
        diagnostics.extend(_skeleton_left(record.path, record.annotation))
    return CheckReport(annotations=len(dataset.annotations), quotes=quotes, diagnostics=diagnostics)


def _under(path: Path | str | None, folder: Path) -> bool:
    if path is None:
        return False
    try:
        return Path(path).resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def _skeleton_left(path: Path, annotation: Annotation) -> list[Diagnostic]:
    texts = {"summary": annotation.summary, "implication": annotation.implication or ""}
    texts.update({f"quotes[{i}].label": q.label for i, q in enumerate(annotation.quotes)})
    lines = read_text(path).splitlines()
    found = []
    for key, value in texts.items():
        if value.lstrip().startswith(f"{TODO}:"):
            line = next((n for n, text in enumerate(lines, 1) if f"{TODO}:" in text and value.strip()[:30] in text),
                        None)
            found.append(Diagnostic(path=path, line=line, message=f"{key} is still the skeleton's TODO text",
                                    hint=f"write the {key.split('[')[0]} before publishing"))
    return found
