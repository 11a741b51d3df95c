"""The sanitizer stage (docs/grading.md, "Sanitizer"): compute-sanitizer's report read back, and the stage's
decisions driven end to end on the CPU by a stand-in `compute-sanitizer` (the probe really runs, on the CPU, in
the grading's sandbox; the stand-in prints what the real tool prints)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernelbench.base.models import Grading, Outcome, SanitizerFinding, SanitizerResult, SanitizerRun
from kernelbench.eval.grade import grade_solution
from kernelbench.eval.grading import STAGE_LIMITS_S
from kernelbench.eval.integrity import sanitizer_output
from kernelbench.eval.stages import sanitizer

# Memcheck in the current location form (function+offset, source file and line, device frames), laid out as in
# the reports quoted in ORNL/HeCBench issue #132 and google-deepmind/mujoco_warp issue #664; names are ours.
MEMCHECK = """\
========= COMPUTE-SANITIZER
candidate's own print, not the tool's
========= Invalid __global__ read of size 4 bytes
=========     at oob_copy_kernel(const float *, float *, int)+0xb0 in solution.cu:12
=========     by thread (31,0,0) in block (3,0,0)
=========     Access at 0x7f698ba00400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f698ba00000 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x2d725e] in libcuda.so.1
=========
========= Invalid __global__ read of size 4 bytes
=========     at oob_copy_kernel(const float *, float *, int)+0xb0 in solution.cu:12
=========     by thread (31,0,0) in block (7,0,0)
=========     Access at 0x7f698ba00800 is out of bounds
=========
========= Invalid __global__ read of size 4 bytes
=========     at float load_row<float>(const float *, int)+0x40 in helpers.cuh:8
=========     by thread (0,0,0) in block (0,0,0)
=========     Access at 0x7f698bb00000 is out of bounds
=========         Device Frame: float load_row<float>(const float *, int)+0x40 in helpers.cuh:8
=========         Device Frame: row_sum_kernel(const float *, float *, int)+0x130 in solution.cu:40
=========
========= ERROR SUMMARY: 3 errors
"""

# Racecheck's analysis report: the layout of NVIDIA/cudf issue #23900 and kokkos/kokkos issue #6217 (an error
# with two partner accesses, a warning with hazard counts, the summary line); names are ours.
RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at racy_reduce_kernel(const float *, float *, int)+0x1f0 in solution.cu:21
=========     and Read access at racy_reduce_kernel(const float *, float *, int)+0x2a0 in solution.cu:24 [16 hazards]
=========     and Read access at racy_reduce_kernel(const float *, float *, int)+0x2c0 in solution.cu:24 [32 hazards]
=========
========= Warning: Race reported between Read access at void warp_sum<float>(float *)+0x570
=========     and Write access at void warp_sum<float>(float *)+0x14b0 [4 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

# The older form (offset first, "Device Frame:" without a space), as in llnl/Quicksilver issue #48.
OLD_MEMCHECK = """\
========= Invalid __global__ read of size 8
=========     at 0x000002e8 in Guts(Monte*, int)
=========     by thread (127,0,0) in block (194,0,0)
=========     Address 0x7f153e0002e8 is out of bounds
=========     Device Frame:TrackingKernel(Monte*, int) (TrackingKernel(Monte*, int) : 0xa0)
=========
========= ERROR SUMMARY: 1 error
"""


def test_memcheck_reports_name_the_kernel_and_keep_the_tools_lines():
    out = sanitizer_output.parse("memcheck", MEMCHECK)
    assert out.finished and out.summary_errors == 3
    assert [(r.kind, r.kernel) for r in out.reports] == [
        ("Invalid __global__ read of size 4 bytes", "oob_copy_kernel(const float *, float *, int)"),
        ("Invalid __global__ read of size 4 bytes", "oob_copy_kernel(const float *, float *, int)"),
        # an inlined device function: the outermost frame is the kernel
        ("Invalid __global__ read of size 4 bytes", "row_sum_kernel(const float *, float *, int)")]
    first = out.reports[0].lines
    assert first[0] == "Invalid __global__ read of size 4 bytes" and "is out of bounds" in first[3]
    assert not any("candidate's own print" in line for r in out.reports for line in r.lines)


def test_racecheck_reports_keep_level_partners_and_hazard_counts():
    out = sanitizer_output.parse("racecheck", RACECHECK)
    assert (out.summary_errors, out.summary_warnings) == (1, 1)
    error, warning = out.reports
    assert (error.kind, error.kernel, error.severity, error.hazards) == (
        "Race reported between Write access and Read access", "racy_reduce_kernel(const float *, float *, int)",
        "error", 48)
    assert (warning.kernel, warning.severity, warning.hazards) == ("void warp_sum<float>(float *)", "warning", 4)


def test_the_older_location_form_reads_the_same():
    out = sanitizer_output.parse("memcheck", OLD_MEMCHECK)
    assert [(r.kind, r.kernel) for r in out.reports] == [("Invalid __global__ read of size 8", "TrackingKernel(Monte*, int)")]


def test_a_run_cut_short_has_no_summary_and_a_summary_without_kept_reports_accuses():
    assert not sanitizer_output.parse("memcheck", MEMCHECK.split("========= ERROR SUMMARY")[0]).finished
    flooded = "========= COMPUTE-SANITIZER\n" + "x" * 100 + "\n========= ERROR SUMMARY: 7 errors\n"
    (report,) = sanitizer_output.parse("memcheck", flooded).reports
    assert report.kernel == sanitizer_output.UNATTRIBUTED and report.severity == "error"
    assert sanitizer_output.parse("memcheck", "========= ERROR SUMMARY: 0 errors\n").reports == []


def test_evidence_is_bounded():
    long_report = "========= Invalid __global__ write of size 4 bytes\n" + "".join(
        f"=========     at k{'x' * 900}(int)+0x{i}\n" for i in range(40))
    (report,) = sanitizer_output.parse("memcheck", long_report).reports
    assert len(report.lines) == sanitizer_output.MAX_EVIDENCE_LINES + 1
    assert all(len(line) <= sanitizer_output.MAX_LINE_CHARS for line in report.lines)


# ------------------------------------------------------------------------------------------------ the stage

STAND_IN = '''#!{python}
"""A stand-in for compute-sanitizer: runs the application, then prints the canned report for its tool and line."""
import json, pathlib, subprocess, sys, time
here = pathlib.Path(__file__).resolve().parent
args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
app = args[args.index({python!r}):]
line = json.loads(pathlib.Path(app[-1]).read_text())["line"]
if (here / "hang").is_file():
    time.sleep(120)
print("========= COMPUTE-SANITIZER", flush=True)
subprocess.run(app)
canned = here / f"{{tool}}_{{line}}.txt"
print(canned.read_text() if canned.is_file() else "========= ERROR SUMMARY: 0 errors", flush=True)
sys.exit(86 if canned.is_file() else 0)
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A compute-sanitizer (KERNELBENCH_COMPUTE_SANITIZER) in a folder of its own; the stage runs on the CPU."""
    folder = tmp_path / "tool"
    folder.mkdir()
    tool = folder / "compute-sanitizer"
    tool.write_text(STAND_IN.format(python=sys.executable))
    tool.chmod(0o755)
    monkeypatch.setenv(sanitizer.TOOL_ENV, str(tool))
    monkeypatch.setattr(sanitizer, "DEVICES", ("cuda", "cpu"))
    return folder


def grade(toy_problem, toy_solutions, **options):
    options.setdefault("sanitizer", True)  # off by default until validated on a GPU (docs/grading.md)
    # graded for the sanitizer's sake: the held-out pair of processes would add nothing here
    return grade_solution(toy_solutions / "honest.py", toy_problem, device="cpu", shapes="smoke", timing=False,
                          held_out=False, **options).grading


def test_a_report_in_the_candidates_own_kernel_fails_it_with_the_tools_evidence(stand_in, toy_problem,
                                                                                 toy_solutions):
    (stand_in / "memcheck_candidate.txt").write_text(MEMCHECK)
    grading = grade(toy_problem, toy_solutions)
    result = grading.sanitizer
    assert grading.outcome is Outcome.CHECK_FAILED and result.passed is False
    assert all(c.passed for c in grading.checks)  # the outputs were right: the sanitizer alone failed it
    memcheck, racecheck = result.runs
    assert memcheck.ran and racecheck.ran and not racecheck.findings
    assert [(f.kernel, f.count, f.in_reference) for f in memcheck.findings] == [
        ("oob_copy_kernel(const float *, float *, int)", 2, False),
        ("row_sum_kernel(const float *, float *, int)", 1, False)]
    assert "is out of bounds" in "\n".join(memcheck.findings[0].evidence)
    assert memcheck.reference_seconds is not None  # the reference ran under the tool to tell library reports apart
    reason = next(r for r in grading.reasons if r.startswith("sanitizer:"))
    assert "memcheck in oob_copy_kernel" in reason and "Invalid __global__ read of size 4 bytes" in reason
    # the smoke shape with the fewest input elements (7x13 against 16x32), on a judged case's own inputs
    assert (result.shape_index, result.shape) == (1, {"M": 7, "N": 9, "K": 13}) and result.case.startswith("s1_base")
    assert result.limit_s == STAGE_LIMITS_S["sanitizer"] and result.seconds >= memcheck.seconds > 0
    assert racecheck.reference_seconds is None  # a clean run needs no comparison
    command = sanitizer.tool_command("/cs", "racecheck", Path("job.json"))
    assert command[:3] == ["/cs", "--tool", "racecheck"] and "--error-exitcode" in command
    # the probe under the tool, started as every stage is (-P: the working folder is not on sys.path)
    assert command[-5:] == [sys.executable, "-P", "-m", "kernelbench.eval.integrity.sanitizer_probe", "job.json"]


def test_a_report_the_reference_also_sets_off_is_recorded_not_failed(stand_in, toy_problem, toy_solutions):
    library = RACECHECK.replace("racy_reduce_kernel", "at::native::reduce_kernel")
    (stand_in / "racecheck_candidate.txt").write_text(library)
    (stand_in / "racecheck_reference.txt").write_text(library.split("========= Warning")[0])
    grading = grade(toy_problem, toy_solutions)
    assert grading.outcome is Outcome.PASS and grading.sanitizer.passed is True
    findings = grading.sanitizer.runs[1].findings
    assert [(f.in_reference, f.fails) for f in findings] == [(True, False), (False, False)]  # its own warning is recorded


def test_warnings_alone_are_recorded_without_running_the_reference(stand_in, toy_problem, toy_solutions):
    warning_only = "========= Warning" + RACECHECK.split("========= Warning")[1].replace("(1 error, 1 warning)",
                                                                                      "(0 errors, 1 warning)")
    (stand_in / "racecheck_candidate.txt").write_text(warning_only)
    grading = grade(toy_problem, toy_solutions)
    racecheck = grading.sanitizer.runs[1]
    assert grading.outcome is Outcome.PASS and grading.sanitizer.passed is True
    assert racecheck.reference_seconds is None
    assert [(f.severity, f.in_reference, f.fails) for f in racecheck.findings] == [("warning", None, False)]


def test_a_missing_tool_or_a_hang_is_not_run_never_a_verdict(stand_in, toy_problem, toy_solutions, monkeypatch):
    (stand_in / "hang").touch()
    (stand_in / "memcheck_candidate.txt").write_text(MEMCHECK)
    grading = grade(toy_problem, toy_solutions, limits={"sanitizer": 4.0})
    assert grading.outcome is Outcome.PASS and grading.sanitizer.passed is None
    assert grading.sanitizer.runs[0].note.startswith("not run: memcheck did not finish")
    assert grading.sanitizer.runs[1].note == "not run: the stage's time limit was spent"
    monkeypatch.setenv(sanitizer.TOOL_ENV, str(stand_in / "absent"))
    grading = grade(toy_problem, toy_solutions)
    assert grading.outcome is Outcome.PASS and grading.sanitizer.note.startswith("not run: compute-sanitizer not found")


def test_off_and_on_the_cpu_the_stage_says_why_it_did_not_run(toy_problem, toy_solutions):
    assert grade(toy_problem, toy_solutions).sanitizer.note == sanitizer.CUDA_ONLY
    assert grade(toy_problem, toy_solutions, sanitizer=False).sanitizer.note == sanitizer.TURNED_OFF
    # off unless asked for, until the stage has been validated on a GPU
    plain = grade_solution(toy_solutions / "honest.py", toy_problem, device="cpu", shapes="smoke", timing=False,
                           held_out=False)
    assert plain.grading.sanitizer.note == sanitizer.TURNED_OFF


def test_verdict_needs_every_tool_and_fails_only_on_own_errors():
    own = SanitizerFinding(tool="memcheck", kernel="k", kind="Invalid __global__ read", in_reference=False)
    shared = own.model_copy(update={"in_reference": True})
    warning = SanitizerFinding(tool="racecheck", kernel="k", kind="Race", severity="warning", in_reference=False)
    ran = SanitizerRun(tool="racecheck", ran=True, findings=[warning])
    assert sanitizer.verdict_of([SanitizerRun(tool="memcheck", ran=True, findings=[own]), ran]) is False
    assert sanitizer.verdict_of([SanitizerRun(tool="memcheck", ran=True, findings=[shared]), ran]) is True
    assert sanitizer.verdict_of([SanitizerRun(tool="memcheck", note="not run: x"), ran]) is None
    # a run the reference could not be compared against records its reports undecided
    assert sanitizer.verdict_of([SanitizerRun(tool="memcheck", findings=[own.model_copy(update={"in_reference": None})],
                                              note="not run: y"), ran]) is None


def test_the_result_round_trips_and_older_gradings_load_without_it():
    result = SanitizerResult(passed=False, shape_index=0, shape={"M": 8}, case="s0_base_1", limit_s=300.0, runs=[
        SanitizerRun(tool="memcheck", ran=True, seconds=1.5, findings=[SanitizerFinding(
            tool="memcheck", kernel="k(float*)", kind="Invalid __global__ read of size 4 bytes", count=2,
            evidence=["Invalid __global__ read of size 4 bytes", "at k(float*)+0x10"], in_reference=False)])])
    grading = Grading(sanitizer=result)
    assert Grading.model_validate_json(grading.model_dump_json()) == grading
    older = json.loads(Grading().model_dump_json())
    del older["sanitizer"]
    assert Grading.model_validate(older).sanitizer is None


def test_the_grade_command_prints_a_line_with_the_tools_text_made_visible():
    from kernelbench.eval.cli import sanitizer_line

    undecided = SanitizerResult(note="", runs=[SanitizerRun(tool="memcheck", note="not run: ended\x1b[2J early")])
    line = sanitizer_line(undecided)
    assert "memcheck: not run: ended" in line and "\x1b" not in line
    shared = SanitizerFinding(tool="memcheck", kernel="k", kind="x", in_reference=True)
    clean = SanitizerResult(passed=True, runs=[SanitizerRun(tool="memcheck", ran=True, findings=[shared])])
    assert sanitizer_line(clean) == "  sanitizer: memcheck and racecheck clean (1 report(s) also in the reference's run)"


@pytest.mark.parametrize("name", ["sanitizer_oob_read.py", "sanitizer_shared_race.py"])
def test_the_planted_solutions_pass_the_static_lint(name):
    """benchmarks/gpu_sanitizer.py expects them failed by the sanitizer on a GPU: nothing before it may stop them."""
    from kernelbench.eval.integrity.lint import lint_solution
    from kernelbench.problems.loader import load_problem_spec

    repo = Path(__file__).resolve().parents[2]
    spec = load_problem_spec(repo / "problems" / "04_kahan_softmax")
    found = lint_solution(repo / "tests" / "redteam" / "gpu" / name, spec)
    assert not [f for f in found if f.severity == "error"], found


def test_the_probe_loads_no_torch_before_it_turns_the_caching_allocator_off():
    """PYTORCH_NO_CUDA_MEMORY_CACHING is read when torch initialises CUDA: the probe sets it in main(), so its
    module (and the packages above it) must not have imported torch by then."""
    import subprocess

    code = "import sys, kernelbench.eval.integrity.sanitizer_probe; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("vocab", [2048, 3000, 1000])  # a multiple of the kernel's block (1024), not, below it
def test_the_planted_read_goes_one_float_past_the_input_whatever_vocab_is_and_the_outputs_stay_right(
        vocab, monkeypatch):
    """The sanitizer stage runs the candidate on the smallest published shape (vocab 262144, a multiple of the
    block): the planted read must happen there too. Run in Triton's interpreter with every load's addresses
    recorded; the input sits at the front of a bigger buffer, so the read past it lands on a sentinel that would
    spoil the last row were it not dropped."""
    pytest.importorskip("triton", reason="triton is not installed (pip install -e '.[eval]')")
    import os

    import torch
    from triton.runtime import interpreter

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs Triton's interpreter (TRITON_INTERPRET=1, set by tests/conftest.py without a GPU)")
    from kernelbench.problems.loader import load_solution
    from kernelbench.problems.modules import load_module

    repo = Path(__file__).resolve().parents[2]
    reference = load_module(repo / "problems" / "04_kahan_softmax" / "reference.py", "kahan_reference")
    planted = load_solution(repo / "tests" / "redteam" / "gpu" / "sanitizer_oob_read.py", "planted")
    read: list[int] = []
    original = interpreter.InterpreterBuilder.create_masked_load

    def recording_load(self, ptrs, mask, *rest):
        read.extend(int(a) for a in ptrs.data[mask.data])
        return original(self, ptrs, mask, *rest)

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_masked_load", recording_load)
    rows = 3
    buffer = torch.randn(rows * vocab + 16, generator=torch.Generator().manual_seed(vocab)) * 3.0
    buffer[rows * vocab:] = 1e30
    x = buffer[:rows * vocab].view(rows, vocab)
    y = planted.Model(vocab)(x)

    expected = reference.Model(vocab)(x)
    assert reference.compare(y, expected, [x], {"atol": 1e-12, "rtol": 1e-5}) == []
    base, size = x.data_ptr(), x.element_size()
    past = sorted({(a - base) // size for a in read if a >= base + rows * vocab * size})
    assert past == [rows * vocab], f"read past the input at element(s) {past[:5]}, expected {rows * vocab} only"
    assert min(read) >= base


def test_memcheck_pads_every_allocation_where_the_tool_offers_it(tmp_path):
    """A read one element past a tensor lands in the next allocation when the two are adjacent; memcheck sees it
    only with a padding buffer after each allocation, asked for where the tool's --help lists the option."""
    offers, lacks = tmp_path / "offers", tmp_path / "lacks"
    offers.write_text("#!/bin/sh\necho '  --padding arg   Size in bytes of a padding buffer after each allocation'\n")
    lacks.write_text("#!/bin/sh\necho '  --tool arg'\n")
    for tool in (offers, lacks):
        tool.chmod(0o755)
    padded = sanitizer.tool_command(str(offers), "memcheck", Path("job.json"))
    assert padded[padded.index("--padding") + 1] == str(sanitizer.PADDING_BYTES)
    assert "--padding" not in sanitizer.tool_command(str(lacks), "memcheck", Path("job.json"))
    assert "--padding" not in sanitizer.tool_command(str(offers), "racecheck", Path("job.json"))  # memcheck's option
    assert not sanitizer.offers_padding(str(tmp_path / "missing"))


def _plan_over(problem: str, tmp_path: Path):
    """A plan's fields the stage's choice of case reads: the deck problem's spec and shapes, one base case each."""
    from types import SimpleNamespace

    from kernelbench.eval.cases import Case
    from kernelbench.eval.grading import GradingOptions
    from kernelbench.problems.problem import open_problem

    spec = open_problem(Path(__file__).parents[2] / "problems" / problem).spec
    cases = [Case(id=f"s{i}_base", shape_index=i, shape=shape, public_seed=42, seed=42)
             for i, shape in enumerate(spec.shapes)]
    return SimpleNamespace(spec=spec, shapes=spec.shapes, cases=cases, workdir=tmp_path, device="cuda",
                           options=GradingOptions(device="cuda", sanitizer=True))


def test_the_stage_picks_the_shape_of_least_work_not_of_fewest_input_elements(tmp_path, monkeypatch):
    """06's Mixtral shape (8 experts of 14,336) holds as many input elements as its first shape and 14x its work in
    its weights, which are parameters, not inputs; racecheck ran past 450 s there on an H100. By the problem's FLOP
    formula the DeepSeek shape (256 thin experts, 240 GFLOP) is the least work, the first shape (275) next."""
    plan = _plan_over("06_sonic_moe_swiglu", tmp_path)
    rows = {i: s["tokens"] * s["top_k"] * s["hidden"] + s["experts"] + 1 for i, s in enumerate(plan.shapes)}
    monkeypatch.setattr(sanitizer, "input_elements", lambda path: rows[int(path.name.split("_")[1][1:])])
    assert min(rows, key=lambda i: (rows[i], i)) == 1          # what fewest input elements chose
    flops = [plan.spec.flops_of(shape) for shape in plan.shapes]
    assert flops[1] > 10 * flops[3] and flops[3] < flops[0]
    assert sanitizer.smallest_case(plan).shape_index == 3


def test_without_work_formulas_the_input_elements_decide(tmp_path, monkeypatch):
    plan = _plan_over("06_sonic_moe_swiglu", tmp_path)
    plan.spec = plan.spec.model_copy(update={"flops": None, "bytes": None})
    elements = {0: 50, 1: 40, 2: 40, 3: 90}
    monkeypatch.setattr(sanitizer, "input_elements", lambda path: elements[int(path.name.split("_")[1][1:])])
    assert sanitizer.smallest_case(plan).shape_index == 1
