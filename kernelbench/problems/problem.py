"""A problem, opened once per command and carried as a value.

`open_problem(path)` is the one place a command reads a problem folder: it detects the folder's layout
(kernelbench.problems.layouts), validates its spec, hashes the files grading depends on and reads the prompt, and
returns a frozen `Problem`. Everything in the command's own process (the grading plan, the run request and the
agent's workspace, the guards, regrade, baselines) is handed that value and asks it, never the folder, so the
layout is detected once and every step sees the same spec and hash. Where a path has to cross a process or reach
the disk (a stage's job names the grader's pristine copy, a sweep's job file names the folder), the path is what
travels, and the receiving side opens it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.problems.layouts.base import ConceptMapping, Layout, OwnScript, OwnWorkspace
from kernelbench.problems.loader import shapes_for
from kernelbench.problems.spec import ProblemSpec

PROMPT_FILE = "PROMPT.txt"


@dataclass(frozen=True)
class Problem:
    """One problem as a command found it: where it is, how it is written, what it asks and what it hashes to."""

    folder: Path                     # resolved: the problem folder (or a single-file layout's file)
    name: str                        # as its layout names the path given (a run's `problem`; a file: its stem)
    layout: Layout
    spec: ProblemSpec
    content_hash: str                # sha256 over the graded files, names included (layout.content_hash)
    deck: str                        # the deck it belongs to by its layout (ours: main)
    files: tuple[Path, ...]          # what the grader's pristine copy holds (graded files, prompt, held-out files)
    prompt: str | None               # the task as written (PROMPT.txt); None where the folder has none

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def spec_file(self) -> Path:
        """The file its spec is read from (ours: problem.yaml; a single-file layout: the file itself)."""
        return self.layout.spec_file(self.folder)

    @property
    def reference_file(self) -> Path:
        return self.layout.reference_file(self.folder)

    @property
    def library_files(self) -> list[Path]:
        """The library line modules (SOTA) the layout ships beside the reference."""
        return self.layout.library_files(self.folder)

    @property
    def workspace_templates(self) -> tuple[str, ...]:
        """Names of the files our workspace puts beside a solution, which a grading watches (the solution must not
        edit them)."""
        return self.layout.workspace_templates

    def reference_in(self, copy: Path) -> Path:
        """Where the reference lies in a copy of the problem (`pristine_copy`), which is in the same layout."""
        return self.layout.reference_file(Path(copy))

    def agent_files(self) -> tuple[Path, ...] | None:
        """The problem's files our workspace gives an agent; None where our workspace cannot serve this layout."""
        return self.layout.agent_files(self.folder)

    def agent_file_name(self, file: Path) -> str:
        """The name one of `agent_files` has in our workspace (a single-file layout's file is its reference.py)."""
        return self.layout.agent_file_name(self.folder, file)

    def agent_prompt(self) -> str | None:
        """The task an agent is given: the prompt as written, else the one its layout writes from the spec."""
        return self.prompt if self.prompt is not None else self.layout.agent_prompt(self.folder, self.spec)

    def own_workspace(self) -> OwnWorkspace | None:
        return self.layout.own_workspace(self.folder)

    def own_checker(self) -> OwnScript | None:
        return self.layout.own_checker(self.folder)

    def own_benchmark(self) -> OwnScript | None:
        return self.layout.own_benchmark(self.folder)

    def roof_named(self) -> str:
        """The GPU whose roof the benchmark's own timing script divides by ("" where its layout names none)."""
        return self.layout.roof_named(self.folder)

    def mapping(self) -> list[ConceptMapping]:
        return self.layout.mapping(self.folder)

    def shapes(self, mode: str) -> list[dict[str, Any]]:
        """`full` → the problem's shapes; `smoke` → its tiny CPU shapes (kernelbench.problems.loader.shapes_for)."""
        return shapes_for(self.spec, mode)

    def graded_spec(self, secret: int) -> ProblemSpec:
        """The spec one grading is judged by: the spec's stress entries and those the layout draws with `secret`."""
        drawn = self.layout.drawn_stress(self.folder, self.spec, secret)
        return self.spec.model_copy(update={"stress": [*self.spec.stress, *drawn]}) if drawn else self.spec

    def load_reference(self) -> ModuleType:
        """The reference module with our interface, imported from the folder under a fresh name (a grading's stages
        import the pristine copy instead: kernelbench.problems.loader.load_reference)."""
        return self.layout.load_reference(self.folder)

    def row_sum_bound(self) -> float | None:
        """The reference's ROW_SUM_BOUND (a Kahan problem's bound on a row's sum), None where it sets none."""
        return self.layout.row_sum_bound(self.folder)

    def baselines_file(self, gpu: str) -> Path:
        """Where the problem's baseline lines measured on `gpu` are filed (kernelbench.problems.baselines)."""
        return self.layout.baselines_dir(self.folder) / f"{gpu}.json"

    def pristine_copy(self, dest: Path) -> Path:
        """Copy the problem's files into `dest/<name>` and return that folder (a folder in the same layout)."""
        import shutil

        target = Path(dest) / self.layout.folder_name(self.folder)
        target.mkdir(parents=True, exist_ok=True)
        for path in self.files:
            if path.is_file():
                copied = target / self.layout.copy_name(self.folder, path)
                copied.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, copied)
        return target

    def pristine_paths(self, pristine: Path) -> list[Path]:
        """Where `pristine_copy` put each of the problem's files that exists."""
        return [Path(pristine) / self.layout.copy_name(self.folder, p) for p in self.files if p.is_file()]

    def watched_folder(self) -> Path:
        """The folder whose files a grading reports as the problem's own when they change (a single-file layout's
        folder holds its file)."""
        return self.folder if self.folder.is_dir() else self.folder.parent


def open_problem(path: Path | str, layout: Layout | None = None) -> Problem:
    """The problem at `path` in whichever layout it is written; an error naming the path and what to point at when
    it is none. The one call that reads a problem folder in a command's own process. `layout`: the one a listing of
    the deck already detected for `path` (kernelbench.problems.layouts.detected), so it is not detected twice."""
    from kernelbench.problems import layouts

    given = Path(path)
    folder = given.resolve()
    layout = layout or layouts.layout_of(folder)
    spec = layout.load_spec(folder)
    prompt = read_prompt(folder / PROMPT_FILE)
    return Problem(folder=folder, name=layout.folder_name(given) or folder.name, layout=layout, spec=spec,
                   content_hash=layout.content_hash(folder), deck=layout.default_deck(folder),
                   files=tuple(layout.copied_files(folder)), prompt=prompt)


def read_prompt(path: Path) -> str | None:
    """The prompt file's text, None where there is none; one that cannot be read is an error naming it."""
    if not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelBenchError(f"cannot read the prompt: {exc}", path=path,
                               hint="write the task the agent is given into PROMPT.txt as UTF-8 text") from None


def as_problem(problem: Problem | Path | str) -> Problem:
    """`problem` itself, or the problem opened at a path: the library's entry points (grade_solution,
    measure_baselines, check_problem) take either, so a script can pass a folder and a command its open value."""
    if isinstance(problem, Problem):
        return problem
    if problem is None:
        raise KernelBenchError("no problem given", hint="pass a problem folder such as problems/01_fp8_gemm")
    return open_problem(problem)
