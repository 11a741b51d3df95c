"""Our own layout (docs/grading.md, contract 1): `problems/<NN>_<name>/` with problem.yaml, reference.py (our
interface: get_init_kwargs(shape), get_inputs(shape, seed, device, case, scale)), optionally sota.py, PROMPT.txt."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from kernelbench.base.decks import MAIN_DECK
from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_yaml
from kernelbench.problems.layouts.base import Layout
from kernelbench.problems.spec import ProblemSpec, load_native_spec

NAME = "native"
SPEC_FILE = "problem.yaml"
GRADED_FILES = (SPEC_FILE, "reference.py", "sota.py")
# what our workspace copies of the problem for an agent (no sota.py, no baselines, no held-out files)
AGENT_FILES = ("reference.py", "problem.yaml")


class NativeLayout(Layout):
    name = NAME
    title = "KernelBench Hard's own layout (problem.yaml with id, shapes, flops and bytes)"

    def detect(self, path: Path) -> bool:
        yaml_path = self.spec_file(path)
        if not yaml_path.is_file():
            return False
        try:
            data = load_yaml(yaml_path)
        except KernelBenchError:
            return True  # ours by default: the syntax error is reported when the spec is loaded
        return not isinstance(data, dict) or "flops_formula" not in data

    def spec_file(self, path: Path) -> Path:
        return Path(path) / SPEC_FILE

    def reference_file(self, path: Path) -> Path:
        return Path(path) / "reference.py"

    def library_files(self, path: Path) -> list[Path]:
        return [Path(path) / "sota.py"]

    def graded_files(self, path: Path) -> list[Path]:
        return [Path(path) / n for n in GRADED_FILES]

    def copied_files(self, path: Path) -> list[Path]:
        # the held-out files travel with the grader's copy (its judge draws their cases), never to the workspace
        return [*self.graded_files(path), Path(path) / "PROMPT.txt", *self.heldout_files(path)]

    def default_deck(self, path: Path) -> str:
        return MAIN_DECK

    def agent_files(self, path: Path) -> tuple[Path, ...]:
        return tuple(Path(path) / n for n in AGENT_FILES)

    def load_spec(self, path: Path) -> ProblemSpec:
        return load_native_spec(Path(path))

    def load_reference(self, path: Path) -> ModuleType:
        from kernelbench.problems.modules import check_interface, load_module

        ref_path = Path(path) / "reference.py"
        reference = load_module(ref_path, "reference")
        check_interface(reference, ref_path, needs_inputs=True)
        return reference


LAYOUT = NativeLayout()
