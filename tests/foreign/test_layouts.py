"""Another benchmark's problems through our grader: detection by content, the concept mapping, bad input naming the
file and key, and the real commands (grade, problem check, baselines) end to end on tiny problems written here in
the KernelBench-Hard folder layout and the Stanford KernelBench single-file layout (CPU)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.problems.layouts import layout_of
from kernelbench.problems.loader import load_problem_spec
from kernelbench.problems.problem import open_problem

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KBH = HERE / "decks" / "kbh-toy"
GEMM, ROW_MAX = KBH / "01_toy_scaled_gemm", KBH / "02_toy_row_max"
STANFORD = HERE / "decks" / "stanford-toy"
LINEAR_RELU, SOFTMAX = STANFORD / "1_Toy_Linear_ReLU.py", STANFORD / "2_Toy_Softmax.py"
SOLUTIONS = HERE / "solutions"
FOREIGN_H100 = REPO / ".foreign" / "kernelbench.com" / "benchmarks" / "hard" / "problems-h100"


def kernelbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelbench", *args], capture_output=True, text=True, timeout=300)


def grade_json(solution: Path, problem: Path) -> tuple[int, dict]:
    proc = kernelbench("grade", str(solution), "--problem", str(problem), "--device", "cpu", "--shapes", "smoke",
                       "--json")
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def copy_problem(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


# ------------------------------------------------------------------------------------------------- detection

def test_each_layout_is_recognised_by_what_the_folder_holds(tmp_path):
    assert layout_of(REPO / "problems" / "04_kahan_softmax").name == "native"
    assert layout_of(GEMM).name == "kernelbench-hard"
    assert layout_of(LINEAR_RELU).name == "stanford-kernelbench"
    alone = tmp_path / "1_Toy_Linear_ReLU"
    alone.mkdir()
    shutil.copy(LINEAR_RELU, alone)
    assert layout_of(alone).name == "stanford-kernelbench"  # a folder holding the one file (the pristine copy)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("hello")
    with pytest.raises(KernelBenchError, match="not a problem in any known layout"):
        layout_of(tmp_path / "notes")


def test_problem_files_follow_the_layout():
    assert {p.name for p in open_problem(GEMM).files} == {"problem.yaml", "reference.py", "shapes.py", "PROMPT.txt"}
    assert open_problem(SOFTMAX).files == (SOFTMAX,)


# ------------------------------------------------------------------------------------------------- the mapping

def test_kernelbench_hard_spec_maps_their_keys_onto_ours():
    spec = load_problem_spec(GEMM)
    assert spec.id == "01_toy_scaled_gemm" and spec.title == "Toy scaled GEMM"
    assert (spec.regime, spec.ceiling) == ("compute", "fp32") and spec.has_roofline
    assert spec.shapes == [{"M": 8, "N": 16, "K": 32}, {"M": 5, "N": 12, "K": 20}]
    assert spec.flops_of(spec.shapes[0]) == 2 * 8 * 16 * 32
    assert spec.seeds == [42, 123, 456] and spec.timing.trials == 5
    # `torch.float32: 1e-3` overrides the default (atol = rtol); the typo key names no dtype and changes nothing
    assert (spec.tolerance["float32"].atol, spec.tolerance["float32"].rtol) == (1e-3, 1e-3)
    assert spec.tolerance["bfloat16"].atol == 1e-2 and spec.tolerance["float8_e4m3fn"].atol == 0.1
    assert spec.forbidden == ["torch.matmul", "torch.nn.functional.linear"]  # F. spelled out for the lint
    assert spec.leak_checks == []  # fp32: no fp8 tensor-core check
    rows = {row.concept: row for row in layout_of(GEMM).mapping(GEMM)}
    assert {"shapes", "seeds", "tolerance", "ceiling", "forbidden ops", "stress cases"} <= set(rows)
    assert "fp32_typo" in rows["tolerance"].lost and rows["stress cases"].lost


def test_a_reference_that_seeds_itself_still_gets_the_secret(tmp_path):
    from kernelbench.problems.loader import load_reference

    ref = load_reference(ROW_MAX)
    shape = {"rows": 3, "cols": 50}
    first, again, other = (ref.get_inputs(shape, s, "cpu")[0] for s in (11, 11, 12))
    assert first.shape == (3, 50)  # lowercase key bound to the module's ROWS / COLS
    assert first.equal(again) and not first.equal(other)  # its own torch.manual_seed(0) is given the case's seed
    seeds_row = {r.concept: r for r in layout_of(ROW_MAX).mapping(ROW_MAX)}["seeds"]
    assert "calls torch.manual_seed" in seeds_row.theirs


def test_drawing_inputs_leaves_the_callers_generator_alone():
    import torch

    from kernelbench.problems.loader import load_reference

    ref = load_reference(GEMM)
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    ref.get_inputs({"M": 8, "N": 16, "K": 32}, 42, "cpu")
    assert torch.rand(3).equal(expected)


def _module_drawing(draw) -> "ModuleType":
    from types import ModuleType

    module = ModuleType("toy_reference")
    module.N = 4
    module.Model = object
    module.get_init_inputs = lambda: []
    module.get_inputs = draw
    return module


def test_a_module_draws_on_the_gradings_device():
    """A CPU draw of a GiB-sized input takes tens of seconds per input set; on the device, milliseconds."""
    import torch

    from kernelbench.problems.layouts.shim import make_reference

    made_on = []

    def draw():
        x = torch.randn(4, 8)
        made_on.append(x.device.type)
        return [x]

    ref = make_reference(_module_drawing(draw), [{"N": 4}], layout="kernelbench_hard")
    (x,) = ref.get_inputs({"N": 4}, 7, "meta")
    assert made_on == ["meta"] and x.device.type == "meta" and x.shape == (4, 8)
    (x,) = ref.get_inputs({"N": 4}, 7, "cpu")
    assert made_on[-1] == "cpu"
    assert x.equal(ref.get_inputs({"N": 4}, 7, "cpu")[0])


def test_a_module_whose_draw_needs_the_host_is_drawn_there():
    import torch

    from kernelbench.problems.layouts.shim import make_reference

    made_on = []

    def draw():  # numpy on a drawn tensor: a device tensor refuses it
        order = torch.randperm(4).numpy()
        x = torch.randn(4, 8)[torch.from_numpy(order)]
        made_on.append(x.device.type)
        return [x]

    ref = make_reference(_module_drawing(draw), [{"N": 4}], layout="kernelbench_hard")
    (x,) = ref.get_inputs({"N": 4}, 7, "meta")
    assert made_on == ["cpu"] and x.device.type == "meta"


def test_stanford_spec_has_one_shape_and_no_roofline():
    spec = load_problem_spec(LINEAR_RELU)
    assert spec.id == "1_Toy_Linear_ReLU" and spec.shapes == [{"batch_size": 8, "in_features": 32,
                                                              "out_features": 16}]
    assert spec.regime is None and not spec.has_roofline and spec.flops_of(spec.shapes[0]) is None
    assert all(t.atol == 1e-2 == t.rtol for t in spec.tolerance.values())
    rows = {row.concept: row for row in layout_of(LINEAR_RELU).mapping(LINEAR_RELU)}
    assert "peak_fraction" in rows["ceiling"].lost


def test_the_real_h100_deck_loads_when_present():
    if not FOREIGN_H100.is_dir():
        pytest.skip(f"the kernelbench.com H100 deck is not fetched into {FOREIGN_H100} (it is never committed)")
    pytest.importorskip("einops", reason="the deck's 02_kda_cutlass reference imports einops")
    problems = sorted(p for p in FOREIGN_H100.iterdir() if p.is_dir())
    assert len(problems) == 6
    for path in problems:
        problem = open_problem(path)
        problem.load_reference()
        assert problem.layout.name == "kernelbench-hard" and problem.spec.has_roofline
        assert problem.deck == "kbh-h100"
    assert load_problem_spec(FOREIGN_H100 / "01_fp8_gemm").leak_checks == ["fp8_reported"]


# ------------------------------------------------------------------------------------------------- bad input

def test_missing_shapes_py_names_the_file(tmp_path):
    problem = copy_problem(GEMM, tmp_path)
    (problem / "shapes.py").unlink()
    with pytest.raises(KernelBenchError) as err:
        load_problem_spec(problem)
    assert err.value.diagnostic.path == problem / "shapes.py" and "missing shapes.py" in str(err.value)


def test_unparsable_formula_names_the_file_line_and_key(tmp_path):
    problem = copy_problem(GEMM, tmp_path)
    text = (problem / "problem.yaml").read_text().replace('"2 * M * N * K"', '"2 * M * N * K)"')
    (problem / "problem.yaml").write_text(text)
    with pytest.raises(KernelBenchError) as err:
        load_problem_spec(problem)
    diag = err.value.diagnostic
    assert diag.path == problem / "problem.yaml" and "flops_formula" in diag.message and diag.line == 7


@pytest.mark.slow
def test_unknown_peak_key_names_the_key(tmp_path):
    problem = copy_problem(GEMM, tmp_path)
    text = (problem / "problem.yaml").read_text().replace("peak_tflops_key: fp32", "peak_tflops_key: fp33")
    (problem / "problem.yaml").write_text(text)
    proc = kernelbench("problem", "check", str(problem))
    assert proc.returncode != 0
    assert "problem.yaml" in proc.stderr and "peak_tflops_key" in proc.stderr and "fp33" in proc.stderr


def test_a_shape_key_that_binds_no_global_is_an_error(tmp_path):
    problem = copy_problem(GEMM, tmp_path)
    (problem / "shapes.py").write_text('SHAPES = [{"M": 8, "N": 16, "K": 32, "Q": 1}]\n')
    with pytest.raises(KernelBenchError, match="'Q'"):
        open_problem(problem).load_reference()


# ------------------------------------------------------------------------------------------------- end to end



@pytest.mark.slow
def test_kbh_layout_end_to_end():
    code, report = grade_json(SOLUTIONS / "kbh_gemm_honest.py", GEMM)
    assert code == 0 and report["grading"]["outcome"] == "pass"
    assert {c["case"].split(":")[0] for c in report["grading"]["checks"]} >= {"base", "property"}

    code, report = grade_json(SOLUTIONS / "kbh_gemm_wrong.py", GEMM)
    # wrong answers fail the checks; once in five full-suite runs an integrity finding was reported first (INVALID)
    assert code == 1 and report["grading"]["outcome"] in ("check_failed", "invalid"), report["integrity"]
    assert any("worst at index" in reason for reason in report["grading"]["reasons"]) \
        or report["grading"]["outcome"] == "invalid"

    code, report = grade_json(SOLUTIONS / "kbh_gemm_library.py", GEMM)
    assert code == 1 and report["grading"]["outcome"] == "invalid"
    errors = [f for f in report["integrity"] if f["severity"] == "error"]
    assert {f["class"] for f in errors} == {1}, errors  # the whole finding, should another class ever appear
    assert {f["check"] for f in errors} == {"launch_audit"}  # the forbidden torch.matmul ran: the verdict
    assert any(f["check"] == "ast_lint" and f["message"].startswith("lead: ") for f in report["integrity"])

    code, report = grade_json(SOLUTIONS / "kbh_row_max_honest.py", ROW_MAX)
    assert code == 0 and report["grading"]["outcome"] == "pass"


@pytest.mark.slow
def test_stanford_layout_end_to_end():
    for solution in ("stanford_linear_relu_same_names.py", "stanford_linear_relu_own_names.py"):
        code, report = grade_json(SOLUTIONS / solution, LINEAR_RELU)
        assert code == 0 and report["grading"]["outcome"] == "pass", (solution, report["grading"]["reasons"])
        assert report["grading"]["peak_fraction"] is None
    code, report = grade_json(SOLUTIONS / "stanford_softmax_honest.py", SOFTMAX)
    assert code == 0 and report["grading"]["shapes"] and report["grading"]["shapes"][0]["median_ms"] > 0
    code, report = grade_json(SOLUTIONS / "stanford_softmax_wrong.py", SOFTMAX)
    assert code == 1 and report["grading"]["correct"] is False


@pytest.mark.slow
def test_problem_check_and_baselines_on_both_layouts(tmp_path):
    proc = kernelbench("problem", "check", str(GEMM), str(ROW_MAX), str(SOFTMAX), str(LINEAR_RELU))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": PASS") == 4 and "kernelbench-hard layout" in proc.stdout
    assert "stanford-kernelbench layout" in proc.stdout

    deck = tmp_path / "stanford-toy"
    shutil.copytree(STANFORD, deck)
    proc = kernelbench("baselines", "--problem", str(deck / SOFTMAX.name), "--device", "cpu", "--lines", "eager")
    assert proc.returncode == 0, proc.stderr
    written = json.loads((deck / "baselines" / SOFTMAX.stem / "cpu.json").read_text())
    assert written["problem"] == SOFTMAX.stem and written["lines"]["eager"]["shapes"][0]["median_ms"] > 0


def test_every_stage_asks_a_foreign_module_for_its_draws_on_the_gradings_device():
    """The shim can draw on the device only if the stages ask it to: the judge (and the fresh stage, through the
    same rule) ask another benchmark's module for the grading's device, this deck's references for the CPU
    (contract 2), and the judge still publishes host tensors."""
    from types import SimpleNamespace

    import torch

    from kernelbench.eval.worker.judge import InputPrefetcher
    from kernelbench.problems.layouts.shim import make_reference
    from kernelbench.problems.loader import inputs_device

    foreign = make_reference(_module_drawing(lambda: [torch.randn(4, 8)]), [{"N": 4}], layout="kernelbench_hard")
    assert inputs_device(foreign, "cuda:1") == "cuda:1"
    assert inputs_device(open_problem(Path("problems/04_kahan_softmax")).load_reference(), "cuda:1") == "cpu"

    asked = []

    def get_inputs(shape, seed, device, case="base", scale=1.0):
        asked.append(device)
        return [torch.ones(2)]

    recorder = SimpleNamespace(get_inputs=get_inputs, THREAD_SAFE_INPUTS=False, DRAWS_ON_DEVICE=True)
    case = SimpleNamespace(shape={"N": 4}, seed=7, case="base", scale=1.0, generator="")
    prefetch = InputPrefetcher(recorder, [case], 1, "meta")
    (x,) = prefetch.take(0)
    assert asked == ["meta"] and x.device.type == "cpu"


def test_a_regrade_plan_opens_each_column_once_with_the_layout_its_listing_found(monkeypatch):
    """`kernelbench regrade` lists the deck (each entry's layout detected once) and opens the problem of each
    column the board has once: every cell of a column carries the same value."""
    from kernelbench.harness.regrade import plan_cells
    from kernelbench.problems import layouts
    from kernelbench.results.published import load_published_board

    board = HERE / "boards" / "kbh-toy"
    seen, detect = [], layouts.detected
    monkeypatch.setattr(layouts, "detected", lambda path: seen.append(Path(path).name) or detect(path))
    monkeypatch.setattr(layouts, "layout_of", lambda path: pytest.fail(f"{path} detected again on opening"))
    cells = plan_cells(load_published_board(board / "leaderboard.json"), board / "solutions", HERE / "decks" / "kbh-toy")
    entries = sorted(p.name for p in (HERE / "decks" / "kbh-toy").iterdir() if not p.name.startswith((".", "_")))
    assert sorted(seen) == entries
    by_column: dict[str, set[int]] = {}
    for cell in cells:
        if cell.problem not in entries:  # a column the deck lacks is listed as such, never opened
            assert cell.opened is None
            continue
        assert cell.opened is not None and cell.opened.name == cell.problem
        by_column.setdefault(cell.problem, set()).add(id(cell.opened))
    assert sorted(by_column) == entries and all(len(ids) == 1 for ids in by_column.values())


def test_a_foreign_draw_never_moves_to_the_cpu_because_the_gpu_was_full():
    """A module's inputs drawn on the GPU fall back to the CPU only for what its code cannot do there; a full card
    is raised (the CPU draw gives other inputs than another process's GPU draw under the same seed)."""
    import torch

    from kernelbench.problems.layouts.shim import draw_on_device

    draws = []

    def full_card() -> list:
        draws.append(1)
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    def numpy_only() -> list:
        draws.append(2)
        if draws.count(2) == 1:  # the draw on the device: this module's code cannot run there
            raise TypeError("can't convert cuda:0 device type tensor to numpy")
        return [torch.ones(2)]

    with pytest.raises(torch.OutOfMemoryError):
        draw_on_device(torch, torch.device("meta"), 3, full_card)
    assert draws == [1]
    assert draw_on_device(torch, torch.device("meta"), 3, numpy_only)[0].device.type == "cpu"
