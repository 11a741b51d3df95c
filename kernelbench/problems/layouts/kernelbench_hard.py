"""The KernelBench-Hard layout (Infatoshi/KernelBench-Hard, kernelbench.com `benchmarks/hard/problems-*`):

    <problem>/problem.yaml   name, display_name, precision, regime, flops_formula, bytes_formula, hardware,
                             peak_tflops_key, peak_bandwidth_key, tolerance, forbidden, sota, num_*_trials
    <problem>/reference.py   Model, module-level shape globals, get_inputs(), get_init_inputs()
    <problem>/shapes.py      SHAPES: a list of dicts whose keys name reference.py's shape globals
    <problem>/sota.py, check.py, benchmark.py, PROMPT.txt

Facts of that benchmark this adapter maps (from its src/eval/correctness.py and its problems' check.py): the seeds
42, 123, 456 set with torch.manual_seed before get_inputs(); shape globals rebound per shape; the per-dtype default
tolerances fp32 1e-4, fp16/bf16 1e-2, fp8 0.1, integers exact, overridden by problem.yaml's `tolerance` keyed by
`torch.<dtype>` or `<dtype>` with a number (atol = rtol) or {atol, rtol}; `forbidden` as substrings of the solution.
Their stress cases live in their harness package (`src/eval`, two folders above the problem), not in the problem
folder: where it is there, kbh_stress declares, draws and applies them through its own functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import LineMap, load_yaml
from kernelbench.problems.heldout import HELDOUT_FILES
from kernelbench.problems.layouts.base import (
    ConceptMapping,
    Layout,
    OwnScript,
    OwnWorkspace,
    first_paragraph,
    parse_source,
    spec_or_error,
)
from kernelbench.problems.layouts.kbh_stress import (
    HARNESS_COPY,
    PACKAGE,
    Entries,
    StressInputs,
    declared_entries,
    drawn_entries,
    harness_files,
    harness_root,
    load_harness,
)
from kernelbench.problems.layouts.shim import check_shape_keys, derived_seed, make_reference
from kernelbench.problems.spec import IndexOutput, ProblemSpec, StressCase, TimingSpec, parse_formula

NAME = "kernelbench-hard"
# the held-out shapes this project declares for their problems (docs/grading.md, "Held-out cases")
HELDOUT_ROOT = Path(__file__).resolve().parent / "heldout" / NAME
MARKER_KEYS = ("flops_formula", "bytes_formula", "peak_tflops_key", "peak_bandwidth_key")
SEEDS = [42, 123, 456]
WARMUP = 10
# their src/eval/correctness.py DEFAULT_TOLERANCE (atol, rtol); a dtype missing there falls back to float32's
DEFAULT_TOLERANCE = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2,
                     "float8_e4m3fn": 1e-1, "float8_e5m2": 1e-1}
TORCH_DTYPES = frozenset({*DEFAULT_TOLERANCE, "float8_e4m3fnuz", "float8_e5m2fnuz", "complex64", "complex128",
                          "int8", "int16", "int32", "int64", "uint8", "bool"})
# their hardware tables' peak keys that name a dense throughput kernelbench/hardware.py has too
PEAK_TFLOPS_KEYS = ("fp4", "fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp64")
PEAK_BANDWIDTH_KEYS = ("dram",)
CONVENTIONAL_ALIASES = (("F.", "torch.nn.functional."), ("Tensor.", "torch.Tensor."), ("nn.", "torch.nn."))


class KernelBenchHardLayout(Layout):
    name = NAME
    title = "KernelBench-Hard (problem.yaml + shapes.py + reference.py)"
    heldout_root = HELDOUT_ROOT

    def detect(self, path: Path) -> bool:
        path = Path(path)
        yaml_path = path / "problem.yaml"
        if not (path.is_dir() and yaml_path.is_file()):
            return False
        try:
            data = load_yaml(yaml_path)
        except KernelBenchError:
            return False
        return isinstance(data, dict) and any(k in data for k in MARKER_KEYS)

    def spec_file(self, path: Path) -> Path:
        return Path(path) / "problem.yaml"

    def reference_file(self, path: Path) -> Path:
        return Path(path) / "reference.py"

    def graded_files(self, path: Path) -> list[Path]:
        """The problem's files, and their harness's modules where it sits beside the deck: its stress cases decide
        verdicts too (kbh_stress)."""
        root = harness_root(Path(path))
        return [Path(path) / n for n in ("problem.yaml", "reference.py", "shapes.py")] + (
            harness_files(root) if root is not None else [])

    def copy_name(self, path: Path, file: Path) -> str:
        """The problem's files by name; their harness's under _harness/ (where kbh_stress looks in a copy); the
        held-out declarations as heldout.yaml and heldout.py, the names a native problem's have."""
        root = harness_root(Path(path))
        if root is not None and Path(file).is_relative_to(root / PACKAGE):
            return str(Path(HARNESS_COPY) / Path(file).relative_to(root))
        declared = self.heldout_files(path)
        if Path(file) in declared:
            return HELDOUT_FILES[declared.index(Path(file))]
        return Path(file).name

    def copied_files(self, path: Path) -> list[Path]:
        # the held-out declarations travel with the grader's copy (its judge draws their cases); no workspace of an
        # agent holds them (own_workspace gives their problem folder's own files only)
        return [*self.graded_files(path), Path(path) / "PROMPT.txt",
                *(file for file in self.heldout_files(path) if file.is_file())]

    def heldout_files(self, path: Path) -> tuple[Path, Path]:
        """Their problem folder is theirs: its held-out shapes are declared in this project, one file per problem
        keyed by the folder's name (HELDOUT_ROOT/<folder>.yaml, property functions in <folder>.py), checked against
        the problem's shapes.py when loaded (Layout.load_heldout)."""
        name = Path(path).name
        return self.heldout_root / f"{name}.yaml", self.heldout_root / f"{name}.py"

    def default_deck(self, path: Path) -> str:
        hardware = _meta(Path(path)).get("hardware") or ["unknown"]
        first = hardware[0] if isinstance(hardware, list) and hardware else str(hardware)
        return "kbh-" + re.sub(r"[^a-z0-9]+", "", str(first).lower())

    # ---------------------------------------------------------------------------------------------- spec

    def load_spec(self, path: Path) -> ProblemSpec:
        path = Path(path)
        meta, yaml_path = _meta(path), path / "problem.yaml"
        shapes = load_shapes(path)
        regime = _regime(meta, yaml_path)
        fields = dict(
            id=path.name, title=str(meta.get("display_name") or meta.get("name") or path.name),
            description=_description(path), regime=regime, ceiling=_ceiling(meta, yaml_path, regime),
            shapes=shapes, flops=_formula(meta, "flops_formula", yaml_path, shapes),
            bytes=_formula(meta, "bytes_formula", yaml_path, shapes), tolerance=tolerances(meta, yaml_path),
            forbidden=list(dict.fromkeys(normalised_forbidden(str(e)) for e in _list(meta, "forbidden", yaml_path))),
            seeds=SEEDS, timing=TimingSpec(warmup=WARMUP, trials=_count(meta, "num_perf_trials", 30, yaml_path)),
            # their prompt lets an up-cast GEMM pass (slower): the FP8 share is reported, not required
            leak_checks=(["fp8_reported"] if _is_fp8(meta) else []) + (["custom_kernel"] if _asks_custom(path) else []),
            index_outputs=SELECTED_BY_VALUE.get(path.name, []), stress=_stress_entries(path, meta).stress)
        return spec_or_error(yaml_path, fields)

    def drawn_stress(self, path: Path, spec: ProblemSpec, secret: int) -> list[StressCase]:
        """Their property cases for one grading: their hypothesis strategy from a seed derived from the secret."""
        path = Path(path)
        root = harness_root(path)
        if root is None:
            return []
        meta = _meta(path)
        return drawn_entries(load_harness(root), _their_name(path, meta), _their_tolerance(meta),
                             derived_seed(secret, f"kbh-property|{path.name}"))

    # ---------------------------------------------------------------------------------------------- code

    def load_reference(self, path: Path) -> ModuleType:
        from kernelbench.problems.modules import load_module

        path = Path(path)
        ref_path = path / "reference.py"
        shapes = load_shapes(path)
        module = load_module(ref_path, "reference")
        require_interface(module, ref_path)
        check_shape_keys(module, shapes, ref_path, "shapes.py")
        root = harness_root(path)
        stress = StressInputs(root, _their_name(path, _meta(path))) if root is not None else None
        return make_reference(module, shapes, layout=NAME, stress=stress)

    # ---------------------------------------------------------------------------------------------- mapping

    def own_checker(self, path: Path) -> OwnScript | None:
        """Their problems' check.py (all shapes, their seeds, their stress cases, their tolerance); it imports
        `src.eval` from their benchmark's root, two folders above the problem (`benchmarks/hard/src`)."""
        return _their_script(Path(path), "check.py")

    def own_benchmark(self, path: Path) -> OwnScript | None:
        """Their problems' benchmark.py: each shape timed by their harness (the same tensors every call, L2 flushed
        between calls, the median of their trials), each shape's milliseconds and the geometric mean of peak
        fractions against the roof of the GPU their problem.yaml names (their table, not the GPU it runs on)."""
        return _their_script(Path(path), "benchmark.py")

    def roof_named(self, path: Path) -> str:
        """The first of problem.yaml's `hardware` list ("" if none): their benchmark.py divides by its roof."""
        import yaml

        try:
            meta = yaml.safe_load((Path(path) / "problem.yaml").read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            return ""
        hardware = meta.get("hardware") if isinstance(meta, dict) else None
        return str(hardware[0]) if isinstance(hardware, list) and hardware else ""

    def own_workspace(self, path: Path) -> OwnWorkspace | None:
        """Their agents' workspace: the problem folder as their prompt describes it (reference.py, problem.yaml,
        shapes.py, their check.py and benchmark.py; not sota.py, the library line the prompt forbids) with their
        harness package two folders up, where check.py imports it from."""
        checker = _their_script(Path(path), "check.py")
        if checker is None:
            return None
        files = tuple(n for n in AGENT_FILES if (Path(path) / n).is_file())
        return OwnWorkspace(files=files, harness=checker.harness, harness_at=checker.harness_at)

    def mapping(self, path: Path) -> list[ConceptMapping]:
        path = Path(path)
        meta, spec = _meta(path), self.load_spec(path)
        return [_shapes_row(spec), _seeds_row(path), _tolerance_row(meta, spec), _roofline_row(meta, spec),
                _forbidden_row(meta, spec), _fp8_row(meta), _stress_row(path, meta, spec), _weights_row(),
                _sota_row(meta),
                _timing_row(spec), *_index_rows(spec), *_custom_row(spec), self._heldout_row(path)]

    def _heldout_row(self, path: Path) -> ConceptMapping:
        declared = self.heldout_files(path)[0]
        where = f"kernelbench/problems/layouts/heldout/{NAME}/{declared.name}"
        try:
            heldout = self.load_heldout(path)
        except KernelBenchError as exc:
            return ConceptMapping(concept="held-out shapes", theirs="none",
                                  ours=f"declared in this project ({where}) but they do not load: {exc}",
                                  lost="the held-out column until the declarations match the problem again")
        if heldout is None:
            return ConceptMapping(concept="held-out shapes", theirs="none", ours="none declared",
                                  lost="the held-out column (correct off the published grid)")
        return ConceptMapping(
            concept="held-out shapes", theirs="none: every case is on the shapes.py grid their prompt lists",
            ours=f"{len(heldout.shapes)} shapes off their grid ({len(heldout.smoke_shapes)} small ones on the CPU), "
                 f"declared in this project ({where}), judged after the grading and reported apart from the "
                 "verdict (docs/grading.md, \"Held-out cases\")")


AGENT_FILES = ("PROMPT.txt", "reference.py", "problem.yaml", "shapes.py", "check.py", "benchmark.py")


def _their_script(path: Path, script: str) -> OwnScript | None:
    """One of their problem's scripts, which import `src` from their benchmark's root two folders up."""
    harness = path.parent.parent / "src"
    if not ((path / script).is_file() and (harness / "eval").is_dir()):
        return None
    return OwnScript(script=script, harness=harness, harness_at="../../src")


# outputs their check.py judges by what they select rather than element by element: top-k's indices ("INDICES:
# lenient ... gather x at sol_indices and check those values match ref_values within tol", 05's check.py)
SELECTED_BY_VALUE = {"05_topk_bitonic": [IndexOutput(output=1, input=0, values=0)]}


def _asks_custom(path: Path) -> bool:
    """Their PROMPT.txt asks for "a real custom kernel" (every H100 problem but one does)."""
    prompt = Path(path) / "PROMPT.txt"
    return prompt.is_file() and "real custom kernel" in " ".join(prompt.read_text(errors="replace").split())


def _custom_row(spec: ProblemSpec) -> list[ConceptMapping]:
    if "custom_kernel" not in spec.leak_checks:
        return []
    return [ConceptMapping(
        concept="custom kernel", theirs="PROMPT.txt: \"This needs to be a real custom kernel\"; nothing checks it",
        ours="on a GPU, some kernel compiled from the solution's own sources (Triton, load_inline, nvcc, CUTLASS "
             "templates) must run: a solution whose every kernel is a prebuilt library's (cuBLAS, ATen) on every "
             "shape is INVALID (check custom_kernel); a shape on library kernels alone is reported",
        lost="how much of the work must be custom is not stated; only none at all is refused")]


def _index_rows(spec: ProblemSpec) -> list[ConceptMapping]:
    return [ConceptMapping(
        concept="index outputs", theirs=f"output {rule.output}: x gathered at the returned indices must match the "
                                        f"reference's values (ties may pick any equal element)",
        ours=f"output {rule.output} judged the same way: indices in range and distinct within a row, input "
             f"{rule.input} gathered at them within output {rule.values}'s tolerance",
        lost="theirs passes an index named twice where tied values make the gathered values match (the same "
             "element selected twice); ours fails it") for rule in spec.index_outputs]


LAYOUT = KernelBenchHardLayout()


# ------------------------------------------------------------------------------------------------- reading

def _meta(path: Path) -> LineMap:
    yaml_path = path / "problem.yaml"
    data = load_yaml(yaml_path)
    if not isinstance(data, dict):
        raise KernelBenchError("expected a mapping at the top level", path=yaml_path, line=1,
                               hint="a KernelBench-Hard problem.yaml holds name, regime, flops_formula, ...")
    assert isinstance(data, LineMap)  # load_yaml reads every mapping as a LineMap
    return data


def _line(meta: Any, key: str) -> int | None:
    return meta.key_lines.get(key) if isinstance(meta, LineMap) else None


def load_shapes(path: Path) -> list[dict[str, Any]]:
    """shapes.py's SHAPES, executed as their harness imports it; every shape a dict of numbers."""
    from kernelbench.problems.modules import load_module

    shapes_path = Path(path) / "shapes.py"
    if not shapes_path.is_file():
        raise KernelBenchError("missing shapes.py", path=shapes_path,
                               hint="a KernelBench-Hard problem lists its shapes in shapes.py as SHAPES = [{...}]")
    shapes = getattr(load_module(shapes_path, "shapes"), "SHAPES", None)
    if not isinstance(shapes, list) or not shapes:
        raise KernelBenchError("SHAPES is missing or empty", path=shapes_path,
                               hint="define SHAPES as a non-empty list of dicts")
    for index, shape in enumerate(shapes):
        if not isinstance(shape, dict) or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in shape.items()):
            raise KernelBenchError(f"SHAPES[{index}] is not a dict of names to numbers", path=shapes_path,
                                   hint="each shape maps reference.py's shape globals to numbers")
    return [dict(s) for s in shapes]


def require_interface(module: ModuleType, path: Path) -> None:
    if not isinstance(getattr(module, "Model", None), type):
        raise KernelBenchError("defines no class Model", path=path)
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise KernelBenchError(f"defines no function {name}()", path=path,
                                   hint="this layout's reference defines get_inputs() and get_init_inputs()")


def _description(path: Path) -> str:
    ref = path / "reference.py"
    if not ref.is_file():
        raise KernelBenchError("missing reference.py", path=ref)
    return first_paragraph(ast.get_docstring(parse_source(ref))) or "(reference.py has no docstring)"


def _regime(meta: LineMap, yaml_path: Path) -> str:
    regime = meta.get("regime")
    if regime not in ("compute", "memory"):
        raise KernelBenchError(f"regime: {regime!r} is neither compute nor memory", path=yaml_path,
                               line=_line(meta, "regime"), hint="set regime: compute or regime: memory")
    return regime


def _ceiling(meta: LineMap, yaml_path: Path, regime: str) -> str:
    """The dtype key of the governing ceiling: peak_tflops_key for compute-bound, "dram" for memory-bound; both keys
    are checked where given (an unknown key would silently score against the wrong roof)."""
    tflops, bandwidth = meta.get("peak_tflops_key"), meta.get("peak_bandwidth_key")
    for key, value, known in (("peak_tflops_key", tflops, PEAK_TFLOPS_KEYS),
                              ("peak_bandwidth_key", bandwidth, PEAK_BANDWIDTH_KEYS)):
        if value is not None and value not in known:
            raise KernelBenchError(f"{key}: unknown peak key {value!r}", path=yaml_path, line=_line(meta, key),
                                   hint=f"known keys: {', '.join(known)}")
    if regime == "compute":
        if tflops is None:
            raise KernelBenchError("peak_tflops_key is missing (regime: compute)", path=yaml_path,
                                   hint=f"name the compute roof: one of {', '.join(PEAK_TFLOPS_KEYS)}")
        return str(tflops)
    return "dram"


def _formula(meta: LineMap, key: str, yaml_path: Path, shapes: list[dict[str, Any]]) -> str:
    text = meta.get(key)
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise KernelBenchError(f"{key} is missing", path=yaml_path, hint=f"give {key} as arithmetic over shape keys")
    try:
        _, names = parse_formula(str(text))
    except ValueError as exc:
        raise KernelBenchError(f"{key}: unparsable formula: {exc}", path=yaml_path, line=_line(meta, key),
                               hint="use + - * / // ** % min max ceil floor over shape keys") from None
    for index, shape in enumerate(shapes):
        missing = sorted(names - set(shape))
        if missing:
            raise KernelBenchError(f"{key}: uses {', '.join(missing)}, which shape {index} of shapes.py does not "
                                   "define", path=yaml_path, line=_line(meta, key),
                                   hint="a formula may only use the keys of every shape")
    return str(text)


def _list(meta: LineMap, key: str, yaml_path: Path) -> list:
    value = meta.get(key) or []
    if not isinstance(value, list):
        raise KernelBenchError(f"{key} is not a list", path=yaml_path, line=_line(meta, key))
    return value


def _count(meta: LineMap, key: str, default: int, yaml_path: Path) -> int:
    value = meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise KernelBenchError(f"{key}: {value!r} is not a positive integer", path=yaml_path, line=_line(meta, key))
    return value


def _is_fp8(meta: LineMap) -> bool:
    return str(meta.get("precision", "")).lower().startswith("fp8")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def tolerance_overrides(meta: LineMap, yaml_path: Path) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """problem.yaml's `tolerance` as their harness reads it: (atol, rtol) by torch dtype name, and the keys it can
    never match (not a torch dtype, spelt with or without `torch.`)."""
    raw = meta.get("tolerance") or {}
    if not isinstance(raw, dict):
        raise KernelBenchError("tolerance is not a mapping", path=yaml_path, line=_line(meta, "tolerance"))
    found, ignored = {}, []
    for key, value in raw.items():
        dtype = str(key).removeprefix("torch.")
        if dtype not in TORCH_DTYPES:
            ignored.append(str(key))
            continue
        pair = _tolerance_pair(value)
        if pair is None:
            raise KernelBenchError(f"tolerance.{key}: {value!r} is neither a number nor {{atol, rtol}}",
                                   path=yaml_path, line=_line(raw, key) or _line(meta, "tolerance"))
        found[dtype] = pair
    return found, ignored


def _tolerance_pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, dict):
        atol, rtol = _number(value.get("atol", 0)), _number(value.get("rtol", 0))
        return (atol, rtol) if atol is not None and rtol is not None else None
    number = _number(value)
    return (number, number) if number is not None else None


def tolerances(meta: LineMap, yaml_path: Path) -> dict[str, dict[str, float]]:
    overrides, _ = tolerance_overrides(meta, yaml_path)
    table = {dtype: (value, value) for dtype, value in DEFAULT_TOLERANCE.items()}
    table.update(overrides)
    return {dtype: {"atol": atol, "rtol": rtol} for dtype, (atol, rtol) in sorted(table.items())}


def normalised_forbidden(entry: str) -> str:
    """A forbidden entry as a dotted name: `from sonic_moe` -> sonic_moe, `F.linear` -> torch.nn.functional.linear."""
    entry = entry.strip()
    for prefix in ("from ", "import "):
        if entry.startswith(prefix):
            entry = entry[len(prefix):].strip().split()[0]
    for alias, full in CONVENTIONAL_ALIASES:
        if entry.startswith(alias):
            return full + entry[len(alias):]
    return entry


def seeds_itself(path: Path) -> bool:
    """Whether reference.py's get_inputs() calls manual_seed itself (every public seed then gives the same inputs
    in their harness)."""
    tree = parse_source(path / "reference.py")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            return any(isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "manual_seed"
                       for n in ast.walk(node))
    return False


# ------------------------------------------------------------------------------------------------- the mapping

def _shapes_row(spec: ProblemSpec) -> ConceptMapping:
    keys = ", ".join(spec.shapes[0])
    return ConceptMapping(
        concept="shapes", theirs=f"shapes.py SHAPES ({len(spec.shapes)} shapes over {keys}); the harness sets "
                                 "reference.<KEY> per shape before get_init_inputs() and get_inputs()",
        ours="the same shapes; each key is bound to reference.py's global of that name (or its capitals) before "
             "the module's functions run",
        lost="no smoke shapes: a CPU grading runs the first full shape")


def _seeds_row(path: Path) -> ConceptMapping:
    fixed = seeds_itself(path)
    return ConceptMapping(
        concept="seeds", theirs="torch.manual_seed(s) for s in 42, 123, 456, then get_inputs()"
                                + ("; get_inputs() itself calls torch.manual_seed, so every seed draws the same inputs"
                                   if fixed else ""),
        ours="the same public seeds, each mixed with the grading's secret seed before get_inputs()"
             + ("; the module's own manual_seed call is given a seed derived from the case's" if fixed else ""),
        lost="")


def _tolerance_row(meta: LineMap, spec: ProblemSpec) -> ConceptMapping:
    _, ignored = tolerance_overrides(meta, Path("problem.yaml"))
    given = meta.get("tolerance") or {}
    shown = ", ".join(f"{d} {t.atol:g}/{t.rtol:g}" for d, t in spec.tolerance.items())
    lost = ("their torch.allclose measures rtol against the solution's value, this grader against the expected "
            "value")
    if ignored:
        lost += f"; key(s) {', '.join(ignored)} name no torch dtype and are ignored, as their harness ignores them"
    return ConceptMapping(
        concept="tolerance", theirs=f"problem.yaml tolerance {dict(given)} over the defaults fp32 1e-4, "
                                    "fp16/bf16 1e-2, fp8 0.1 (atol = rtol), integers exact",
        ours=f"atol/rtol by output dtype: {shown}; |out - expected| <= atol + rtol·|expected|; integers exact",
        lost=lost)


def _roofline_row(meta: LineMap, spec: ProblemSpec) -> ConceptMapping:
    hardware = ", ".join(str(h) for h in (meta.get("hardware") or [])) or "unnamed"
    return ConceptMapping(
        concept="ceiling", theirs=f"regime {spec.regime}, peak_tflops_key {meta.get('peak_tflops_key')}, "
                                  f"peak_bandwidth_key {meta.get('peak_bandwidth_key')} of their table for "
                                  f"{hardware}; flops {spec.flops}; bytes {spec.bytes}",
        ours=f"the same formulas; the {spec.ceiling} roof of the GPU graded on (kernelbench/hardware.py datasheet "
             "figures)",
        lost="a peak fraction is of each GPU's own ceiling: fractions from an H100 PCIe board and an H100 SXM "
             "compare only through those ceilings")


def _forbidden_row(meta: LineMap, spec: ProblemSpec) -> ConceptMapping:
    listed = [str(e) for e in meta.get("forbidden") or []]
    return ConceptMapping(
        concept="forbidden ops", theirs="solution.py searched for the text of: " + (", ".join(listed) or "nothing"),
        ours="the lint and the launch audit on: " + (", ".join(spec.forbidden) or "nothing")
             + "; each widened to its family of library doors (a forbidden GEMM forbids every GEMM library call "
               "and cuBLAS kernel)",
        lost="their text search also matches comments and strings; here only code that reaches the name counts")


def _fp8_row(meta: LineMap) -> ConceptMapping:
    if not _is_fp8(meta):
        return ConceptMapping(concept="tensor-core path", theirs=f"precision {meta.get('precision')}",
                              ours="no instruction-level check (not an FP8 problem)")
    return ConceptMapping(
        concept="tensor-core path", theirs=f"precision {meta.get('precision')}; nothing checks which instructions "
                                           "ran, so an upcast bf16 GEMM passes",
        ours="each shape's share of device time in kernels holding FP8 tensor-core instructions, read from their "
             "machine code and reported (leak check fp8_reported): their PROMPT.txt lets an up-cast GEMM pass "
             "correctness at about half the roofline, so it is no verdict here; a GEMM in a library still is (the "
             "launch audit)")


def _their_name(path: Path, meta: LineMap) -> str:
    """The name their harness keys its tables by (check.py passes problem.yaml's `name`)."""
    return str(meta.get("name") or path.name)


def _their_tolerance(meta: LineMap) -> dict | None:
    """problem.yaml's tolerance as their check.py hands it to their harness (a plain dict, or None)."""
    raw = meta.get("tolerance")
    return {str(k): (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()} if isinstance(raw, dict) \
        and raw else None


def _stress_entries(path: Path, meta: LineMap) -> Entries:
    root = harness_root(path)
    if root is None:
        return Entries([], [])
    return declared_entries(load_harness(root), _their_name(path, meta), _their_tolerance(meta))


def _tolerance_text(stress: StressCase) -> str:
    return ", ".join(f"{d} {t.atol:g}/{t.rtol:g}" for d, t in stress.tolerance.items()) or "the problem's"


def _stress_row(path: Path, meta: LineMap, spec: ProblemSpec) -> ConceptMapping:
    theirs = ("numeric_stress (named input scalings on every shape and seed, each with its tolerance_for_case) "
              "and property_stress (structural rewrites on one shape: their canonical case and hypothesis draws "
              "from a fresh seed, within tolerance_for_property) in their harness (src/eval), outside the problem "
              "folder")
    root = harness_root(path)
    if root is None:
        return ConceptMapping(concept="stress cases", theirs=theirs,
                              ours="none drawn: their harness (src/eval two folders above the problem) is not "
                                   "beside this deck; property draws are extra seeds of the base distribution",
                              lost="the stress distributions and property cases")
    entries = _stress_entries(path, meta)
    numeric = [s for s in entries.stress if s.shapes is None]
    bound = [s for s in entries.stress if s.shapes is not None]
    parts = [f"{s.case_label} (within {_tolerance_text(s)})" for s in numeric]
    if bound:
        parts.append(f"{bound[0].case_label} on shape {bound[0].shapes[0] if bound[0].shapes else '?'} "
                     f"(within {_tolerance_text(bound[0])}) and, per grading, their generated property cases "
                     "drawn by their generate_property_cases from a seed derived from the secret seed, each "
                     "labelled property:<case>")
    ours = ("their cases as our stress entries, run through their harness: the base inputs drawn with our "
            "secret-mixed seed, then rewritten by their numeric_stress_context / apply_property_case; judged by "
            "our comparison within the tolerance their harness sets for the case: " + "; ".join(parts or ["none"]))
    lost = [("numeric cases on the smallest shape with one secret-mixed seed in the correctness check (theirs: "
             "every shape x seeds 42, 123, 456), and on every other shape once as timed stress inputs, checked "
             "before they are timed"),
            "the property checks' warmed same-storage replay (this grader's own memoisation probes stand in)",
            "a shape a CPU grading does not run (it runs the first shape) carries none of its property cases",
            *entries.lost]
    return ConceptMapping(concept="stress cases", theirs=theirs, ours=ours, lost="; ".join(lost))


def _weights_row() -> ConceptMapping:
    return ConceptMapping(concept="weights", theirs="Model(*get_init_inputs()); the reference's state_dict loaded "
                                                    "into the solution with strict=True",
                          ours="the same, the reference's weights drawn from a secret-mixed seed")


def _sota_row(meta: LineMap) -> ConceptMapping:
    sota = meta.get("sota") or {}
    name = sota.get("name") if isinstance(sota, dict) else None
    return ConceptMapping(concept="SOTA line", theirs=f"sota.py sota_forward() ({name or 'unnamed'})",
                          ours="not used", lost="the SOTA baseline line (sota.py exposes a function, not a Model)")


def _timing_row(spec: ProblemSpec) -> ConceptMapping:
    return ConceptMapping(
        concept="timing", theirs=f"10 warmup calls, median of num_perf_trials={spec.timing.trials} calls on one "
                                 "input set, 128 MB L2 flush, CUDA events",
        ours=f"this grader's protocol with {spec.timing.trials} trials: a fresh input set for every timed call, "
             "L2 flushed at twice its size, every timed output judged",
        lost="")


__all__ = ["LAYOUT", "NAME", "KernelBenchHardLayout", "load_shapes", "normalised_forbidden", "tolerances"]
