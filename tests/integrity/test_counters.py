"""The hardware-counter check: the bytes each problem must read, ncu's CSV, the verdict, and the grading step
driven end to end on the CPU by stand-in `ncu` executables (the probe really runs, on the CPU; the stand-in
prints what ncu prints: its log lines, its permission error, its `--csv --page raw` report with chosen counts)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import torch

from kernelbench.cli import main as kernelbench_main
from kernelbench.eval.grade import grade_solution
from kernelbench.eval.integrity import counters
from kernelbench.eval.integrity.counter_probe import ProbeStatus
from kernelbench.eval.integrity.counters import CounterReading, Requirement, decide, parse_ncu_csv
from kernelbench.problems.loader import load_module
from kernelbench.problems.loader import load_problem_spec

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
HONEST = REPO / "solutions" / "eager" / "04_kahan_softmax.py"

# What the rule demands, read off each reference: the tensors its forward must read in full, in their dtypes.
MUST_READ = {
    "01_fp8_gemm": lambda s: s["M"] * s["K"] + s["N"] * s["K"] + 4 * s["M"] + 4 * s["N"],  # x, w (fp8), scales
    "02_kda": lambda s: s["batch"] * s["seq_len"] * s["num_heads"] * (10 * s["head_dim"] + 2),  # q k v g beta
    # the K/V pages the block table references (not the pool), q, and the table's entries for those pages
    "03_paged_attention": lambda s: (4 * s["batch"] * s["seq_len"] * s["num_kv_heads"] * s["head_dim"]
                                     + 2 * s["batch"] * s["num_heads"] * s["head_dim"]
                                     + 4 * s["batch"] * s["seq_len"] / s["page_size"]),
    "04_kahan_softmax": lambda s: 4 * s["rows"] * s["vocab"],
    "05_topk_bitonic": lambda s: 4 * s["batch"] * s["n"],
    "06_sonic_moe_swiglu": lambda s: (2 * s["tokens"] * s["top_k"] * s["hidden"]  # routed rows, gate and up
                                      + 4 * s["experts"] * s["intermediate"] * s["hidden"]),
    "07_w4a16_gemm": lambda s: (s["N"] * s["K"] / 2 + 4 * s["N"] * s["K"] / s["group_size"]  # int4, scales, zeros
                                + 2 * s["M"] * s["K"]),
    "08_gqa_prefill_attention": lambda s: (2 * s["batch"] * s["num_heads"] * s["seq_len"] * s["head_dim"]
                                           + 4 * s["batch"] * s["num_kv_heads"] * s["seq_len"] * s["head_dim"]),
    "09_add_rmsnorm_fp8_quant": lambda s: 4 * s["tokens"] * s["hidden"] + 2 * s["hidden"],  # x, residual, weight
}

PERMISSION_ERROR = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                    "Performance Counters on the target device 0. For instructions on enabling permissions and to "
                    "get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","dram__bytes_read.sum","dram__bytes_write.sum"')
UNITS = '"","","","","","","","","","","","byte","byte"'


def _row(i: int, name: str, read: str, write: str) -> str:
    return f'"{i}","4242","python3","gpu-host","{name}","1","7","(256, 1, 1)","(128, 1, 1)","0","9.0","{read}","{write}"'


def report_csv(rows: list[tuple[str, ...]]) -> str:
    """ncu's report of the sentinel and `rows` (name, bytes read, bytes written[, duration in ns]); with a
    duration on any row, the report has ncu's gpu__time_duration.sum column."""
    if not any(len(r) == 4 for r in rows):
        body = [_row(i, *r) for i, r in enumerate([("spin_kernel", "0", "0"), *rows])]
        return "\n".join([HEADER, UNITS, *body]) + "\n"
    body = [_row(i, *r[:3]) + f',"{r[3] if len(r) == 4 else 0}"'
            for i, r in enumerate([("spin_kernel", "0", "0", "1,000,512"), *rows])]
    return "\n".join([HEADER + ',"gpu__time_duration.sum"', UNITS + ',"nsecond"', *body]) + "\n"


STAND_IN = '''#!{python}
"""A stand-in for ncu: runs the application as ncu would, then leaves ncu's log and report."""
import pathlib, subprocess, sys, time
MODE, REPORT = {mode!r}, {report!r}
args = sys.argv[1:]
if "--import" in args:
    sys.stdout.write(pathlib.Path(args[args.index("--import") + 1]).read_text())
    sys.exit(0)
log, export = pathlib.Path(args[args.index("--log-file") + 1]), pathlib.Path(args[args.index("--export") + 1])
export = export if export.suffix == ".ncu-rep" else export.with_name(export.name + ".ncu-rep")
# beside its log: the only folder of the grading the counter pass may write (it runs in the grading's sandbox)
(log.parent / "ncu.pid").write_text(str(__import__("os").getpid()))
(log.parent / "ncu.cwd").write_text(" ".join(sorted(p.name for p in pathlib.Path.cwd().iterdir())))
if MODE == "hang":
    for _ in range(3000):
        with open(log.parent / "ncu.beat", "a") as beat:
            beat.write(".")
        time.sleep(0.1)
app = subprocess.Popen(args[args.index({python!r}):])  # the application: the interpreter and its arguments
lines = [f"==PROF== Connected to process {{app.pid}} ({{args[args.index({python!r})]}})"]
app.wait()
if MODE == "denied":
    lines += [{denied!r}, "==WARNING== No kernels were profiled."]
else:
    export.write_text(REPORT)
    lines += ['==PROF== Profiling "spin_kernel" - 0: 0%....50%....100% - 1 pass', f"==PROF== Report: {{export}}"]
log.write_text("\\n".join(lines + [f"==PROF== Disconnected from process {{app.pid}}"]) + "\\n")
sys.exit(1 if MODE == "denied" else 0)
'''


def stand_in_ncu(tmp_path: Path, monkeypatch, mode: str, rows: list[tuple[str, ...]] = ()) -> Path:
    """An `ncu` on PATH (the only one: KERNELBENCH_NCU unset) behaving as `mode` says."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(STAND_IN.format(python=sys.executable, mode=mode, report=report_csv(list(rows)),
                                   denied=PERMISSION_ERROR))
    ncu.chmod(0o755)
    spy_on_the_pass(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(counters.NCU_ENV, raising=False)
    monkeypatch.setattr(counters, "DEVICES", ("cuda", "cpu"))  # the pass runs on CPU gradings here
    return ncu


def spy_on_the_pass(tmp_path: Path, monkeypatch) -> None:
    """What the pass left in its folder, copied to `tmp_path / "seen"` when it returns (the grading's folder goes
    with the grading), with the stand-in's heartbeat measured twice half a second apart (it must have stopped)."""
    measure = counters.measure

    def spied(job, workdir, *args, **kwargs):
        reading = measure(job, workdir, *args, **kwargs)
        beat = Path(workdir) / "ncu.beat"
        sizes = []
        for _ in range(2):
            sizes.append(beat.stat().st_size if beat.exists() else -1)
            time.sleep(0.5)
        shutil.copytree(workdir, tmp_path / "seen", dirs_exist_ok=True)
        (tmp_path / "seen" / "beat-sizes").write_text(" ".join(map(str, sizes)))
        return reading

    monkeypatch.setattr(counters, "measure", spied)


def grade_smoke(**kwargs):
    """The honest Kahan line graded for its counter pass: the held-out stage, which runs after it and never sees
    it, is turned off (tests/eval/test_heldout.py grades it)."""
    return grade_solution(HONEST, PROBLEMS / "04_kahan_softmax", device="cpu", shapes="smoke", timing=False,
                          held_out=False, **kwargs)


def dram_finding(report) -> dict:
    [found] = [f for f in report.integrity if f.check == counters.CHECK]
    return found


# ------------------------------------------------------------------------------------------------- per problem

@pytest.mark.parametrize("problem", sorted(MUST_READ))
def test_required_bytes_are_the_formula_less_the_real_outputs(problem: str):
    """On every smoke shape the reference's real outputs are exactly the write part of the bytes formula, so the
    formula less the outputs is what the rule demands (MUST_READ), and that never exceeds what the forward is
    given (inputs and weights): an honest kernel can always meet it."""
    spec = load_problem_spec(PROBLEMS / problem)
    reference = load_module(PROBLEMS / problem / "reference.py", "reference")
    for shape in spec.smoke_shapes:
        torch.manual_seed(0)
        model = reference.Model(**reference.get_init_kwargs(shape))
        inputs = reference.get_inputs(shape, 11, "cpu")
        with torch.no_grad():
            out = model(*inputs)
        outs = [out] if isinstance(out, torch.Tensor) else list(out)
        written = sum(t.numel() * t.element_size() for t in outs)
        given = sum(t.numel() * t.element_size() for t in [*inputs, *model.state_dict().values()]
                    if isinstance(t, torch.Tensor))
        assert spec.bytes_of(shape) - written == pytest.approx(MUST_READ[problem](shape)), shape
        assert 0 < MUST_READ[problem](shape) <= given, shape


def test_paged_attention_demands_the_referenced_pages_not_the_pool():
    spec = load_problem_spec(PROBLEMS / "03_paged_attention")
    reference = load_module(PROBLEMS / "03_paged_attention" / "reference.py", "reference")
    shape = spec.smoke_shapes[0]
    _, k_cache, _, table, lengths = reference.get_inputs(shape, 11, "cpu")
    pages = (lengths.long() + shape["page_size"] - 1) // shape["page_size"]
    referenced = {int(p) for row, n in zip(table, pages.tolist()) for p in row[:n]}
    assert len(referenced) == int(pages.sum()) < k_cache.shape[0]  # no page shared; spare pages in the pool
    pool = 2 * k_cache.numel() * k_cache.element_size()
    assert MUST_READ["03_paged_attention"](shape) < pool


def test_probe_shape_is_the_one_with_fewest_bytes():
    spec = load_problem_spec(PROBLEMS / "04_kahan_softmax")
    index = counters.probe_shape(spec, dict(enumerate(spec.shapes)))
    assert spec.shapes[index] == {"rows": 32, "vocab": 262144}  # 33.6 MB in: fits the H100's 50 MB L2


# ------------------------------------------------------------------------------------------------- csv, verdict

def test_parse_ncu_csv_in_launch_order():
    text = ("==PROF== Connected to process 4242 (/usr/bin/python3)\n"
            + "\n".join([HEADER, UNITS, _row(1, "softmax_kernel", "67,108,864", "67,110,912"),
                         _row(0, "spin_kernel", "0", "0"), _row(2, "triton_red_fused_0", "1,024", "0")])
            + "\n==PROF== Disconnected from process 4242\n")
    assert parse_ncu_csv(text) == [("spin_kernel", 0.0, 0.0, None), ("softmax_kernel", 67108864.0, 67110912.0, None),
                                   ("triton_red_fused_0", 1024.0, 0.0, None)]
    assert parse_ncu_csv("==ERROR== no report") == []


def test_kernel_durations_are_read_and_summed_into_the_evidence(monkeypatch):
    """ncu's gpu__time_duration.sum (nanoseconds with --print-units base) beside the bytes: the measured call's
    kernel time, the sentinel's left out."""
    header = HEADER + ',"gpu__time_duration.sum"'
    units = UNITS + ',"nsecond"'
    text = "\n".join([header, units, _row(0, "spin_kernel", "0", "0") + ',"1,000,512"',
                      _row(1, "softmax_kernel", "33,554,432", "33,554,432") + ',"41,216"',
                      _row(2, "triton_red_fused_0", "1,024", "0") + ',"3,104"'])
    rows = parse_ncu_csv(text)
    assert [r.ns for r in rows] == [1000512.0, 41216.0, 3104.0]
    reading = CounterReading()
    # `ncu --import` of the report, as it prints it
    monkeypatch.setattr(counters.subprocess, "run",
                        lambda cmd, **kw: counters.subprocess.CompletedProcess(cmd, 0, stdout=text, stderr=""))
    counters._read_report(reading, "ncu", Path("counters.ncu-rep"))
    assert reading.sentinel and reading.kernel_ns == 44320.0
    assert "gpu__time_duration.sum 44.3 us over 2 kernel(s)" in decide(reading, NEED).evidence


NEED = Requirement(1, {"rows": 32, "vocab": 262144}, 67108864.0, 33554432)


def _reading(read: float, kernels: int = 1, **kw) -> CounterReading:
    return CounterReading(read_bytes=read, write_bytes=33554432, kernels=["k"] * kernels, sentinel=True,
                          status=ProbeStatus(called=True), **kw)


def test_verdict_rule_and_its_evidence():
    ok = decide(_reading(33554432), NEED)
    assert ok.severity == "info" and "cover" in ok.message and "33,554,432 B" in ok.evidence
    short = decide(_reading(16777216), NEED)
    assert (short.severity, short.klass, short.check) == ("error", 5, "dram_bytes")
    assert "50.0%" in short.message
    assert "dram__bytes_read.sum 16,777,216 B" in short.evidence and "must read 33,554,432 B" in short.evidence
    assert decide(_reading(0.97 * 33554432 + 1), NEED).severity == "info"  # the floor itself
    nothing = decide(_reading(0, kernels=0), NEED)
    assert (nothing.severity, nothing.klass) == ("error", 7) and "no GPU kernel" in nothing.message


def test_verdict_when_nothing_was_measured():
    assert decide(CounterReading(skipped="ncu not found (x)"), NEED).severity == "info"
    crashed = decide(CounterReading(status=ProbeStatus(stage="call", error="RuntimeError: boom"),
                                    log="==PROF== Connected"), NEED)
    assert (crashed.severity, crashed.klass) == ("warning", 8) and "boom" in crashed.evidence
    quit_early = decide(CounterReading(status=ProbeStatus(called=False, stage="warm-up")), NEED)
    assert quit_early.severity == "warning" and "warm-up" in quit_early.evidence
    ours = decide(CounterReading(status=ProbeStatus(stage="range", error="RuntimeError: NVTX functions not installed")),
                  NEED)
    assert ours.severity == "info" and "NVTX" in ours.evidence  # the grader's own step: no blame
    missed = decide(CounterReading(status=ProbeStatus(called=True), log="==WARNING== No kernels were profiled."), NEED)
    assert missed.severity == "info" and "No kernels were profiled" in missed.evidence  # range not seen: no verdict


def test_missing_ncu_is_reported(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(counters.NCU_ENV, str(tmp_path / "no-such-ncu"))
    reading = counters.measure({}, tmp_path / "counters", {}, 5.0)
    found = decide(reading, NEED)
    assert found.severity == "info" and "ncu not found" in found.evidence and "no-such-ncu" in found.evidence


# ------------------------------------------------------------------------------------------------- end to end

@pytest.mark.slow
def test_the_probe_runs_in_the_grading_folder_like_every_stage(tmp_path: Path, monkeypatch):
    """A candidate that tells stages apart by what lies around it (the bench stage's output folder, say) must not
    tell the counter pass's call from a timed one: the probe runs where the stages run."""
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "12,288", "12,000")])
    report = grade_smoke()
    assert report.grading.outcome == "pass", report.grading.reasons
    seen = (tmp_path / "seen" / "ncu.cwd").read_text().split()  # what lay in the probe's working folder
    assert {"inputs", "check", "counters"} <= set(seen), seen


def test_kahan_library_sums_in_the_measured_call_are_refused():
    """The measured call gets the whole launch audit: on a Kahan problem an uncompensated library sum too."""
    spec = load_problem_spec(PROBLEMS / "04_kahan_softmax")
    reading = CounterReading(kernels=["void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                                      "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
                                      "float>::operator()>, unsigned int, float, 4> >(...)"], sentinel=True)
    found = counters.unprofiled_launch_findings(reading, spec)
    assert [(f.check, f.klass) for f in found] == [("kahan_library_sum", 14)]
    assert "profiler off" in found[0].message

@pytest.mark.slow
def test_grading_passes_when_the_call_reads_its_inputs(tmp_path: Path, monkeypatch, capsys):
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "12,288", "12,000")])
    code = kernelbench_main(["grade", str(HONEST), "--problem", str(PROBLEMS / "04_kahan_softmax"),
                             "--device", "cpu", "--shapes", "smoke", "--json", "--held-out", "off"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["grading"]["outcome"]) == (0, "pass"), report["grading"]["reasons"]
    [found] = [f for f in report["integrity"] if f["check"] == "dram_bytes"]
    assert found["severity"] == "info" and "must read 12,000 B" in found["evidence"]  # smoke shape 3 x 1000
    assert "cover" in found["message"]  # a verdict needs the probe's word that it made the call (on the CPU)
    assert "counters" in report["stages"]


@pytest.mark.slow
def test_grading_is_invalid_when_the_call_reads_too_little(tmp_path: Path, monkeypatch):
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "6,016", "12,000")])
    report = grade_smoke()
    assert report.grading.outcome.value == "invalid"
    found = dram_finding(report)
    assert (found.severity, found.klass) == ("error", 5) and "50.1%" in found.message
    assert "dram__bytes_read.sum 6,016 B" in found.evidence and "[softmax_kernel]" in found.evidence
    assert any("class 5" in r for r in report.grading.reasons)


@pytest.mark.slow
def test_counters_not_permitted_is_info_quoting_ncu(tmp_path: Path, monkeypatch):
    stand_in_ncu(tmp_path, monkeypatch, "denied")
    report = grade_smoke()
    assert report.grading.outcome.value == "pass"
    found = dram_finding(report)
    assert found.severity == "info" and "ERR_NVGPUCTRPERM - The user does not have permission" in found.evidence


@pytest.mark.slow
def test_a_pass_past_its_limit_is_killed_and_reported(tmp_path: Path, monkeypatch):
    stand_in_ncu(tmp_path, monkeypatch, "hang")
    started = time.monotonic()
    report = grade_smoke(limits={"counters": 2.0})
    assert report.grading.outcome.value == "pass" and report.stages["counters"] < 8
    found = dram_finding(report)
    assert found.severity == "info" and "did not finish in 2 s" in found.evidence
    before, after = map(int, (tmp_path / "seen" / "beat-sizes").read_text().split())
    assert before > 0 and after == before  # the stand-in ran, and nothing of the pass lives on after its limit
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_counters_off_is_recorded(tmp_path: Path, monkeypatch, capsys):
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "1", "1")])
    code = kernelbench_main(["grade", str(HONEST), "--problem", str(PROBLEMS / "04_kahan_softmax"), "--device",
                             "cpu", "--shapes", "smoke", "--json", "--counters", "off", "--held-out", "off"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, (report["grading"]["outcome"], report["grading"]["reasons"])
    [found] = [f for f in report["integrity"] if f["check"] == "dram_bytes"]
    assert found["severity"] == "info" and "--counters off" in found["evidence"]
    assert report["grading"]["shapes"] and all(s["median_ms"] is not None for s in report["grading"]["shapes"])
    assert not (tmp_path / "seen").exists()  # ncu never started
    # --held-out off, likewise: said in the result, and its stage pair never started
    assert report["grading"]["held_out"]["correct"] is None and "turned off" in report["grading"]["held_out"]["note"]
    assert "heldout" not in report["stages"] and "[held-out]" not in report["check_log"]


def test_what_ncu_measured_outranks_what_the_probe_says_of_itself():
    """The probe's status file is written inside the candidate's process: a candidate claiming its call never
    ran cannot turn a measured read of too few bytes into 'not run'."""
    need = counters.Requirement(0, {"rows": 3}, 12_000.0, 0)
    forged = counters.ProbeStatus(stage="call", called=False, error="the call raised (says the probe)")
    reading = CounterReading(read_bytes=1_000.0, kernels=["skimming_kernel"], sentinel=True, status=forged)
    found = counters.decide(reading, need)
    assert (found.severity, found.klass) == ("error", 5) and "8.3%" in found.message


PROFILER_AWARE = '''"""Honest softmax, except in the process the counter pass profiles (found by its command line): there it
reads every byte with an allowed reduction and returns that, as a solution would that shows ncu allowed kernels
while a forbidden library does its work everywhere else."""
import sys

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if any("counter_probe" in arg for arg in sys.argv):
            return x.amax(dim=-1, keepdim=True).expand_as(x).contiguous()
        shifted = x - x.amax(dim=-1, keepdim=True)
        terms = torch.exp(shifted)
        return (terms.double() / terms.double().sum(dim=-1, keepdim=True)).to(torch.float32)
'''


@pytest.mark.slow
def test_a_call_that_computes_otherwise_under_the_profiler_is_invalid(tmp_path: Path, monkeypatch):
    """Its kernels read every byte (the floor holds) and are allowed ones: only its output gives it away."""
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("reduce_kernel", "12,288", "12,000")])
    solution = tmp_path / "solution" / "solution.py"
    solution.parent.mkdir()
    solution.write_text(PROFILER_AWARE)
    report = grade_solution(solution, PROBLEMS / "04_kahan_softmax", device="cpu", shapes="smoke", timing=False,
                            held_out=False)
    assert report.grading.outcome.value == "invalid", report.grading.reasons
    [wrong] = [f for f in report.integrity if f.check == counters.PROFILED_CHECK]
    assert (wrong.severity, wrong.klass) == ("error", 8)
    assert "shape 1" in wrong.evidence and "tolerance" in wrong.evidence, wrong.evidence
    assert (tmp_path / "seen" / counters.PROBE_OUTPUT).is_file()  # written by the probe, judged by the grader
    assert dram_finding(report).severity == "info"  # the byte floor alone does not see it


@pytest.mark.slow
def test_an_honest_call_under_the_profiler_is_judged_and_matches(tmp_path: Path, monkeypatch):
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "12,288", "12,000")])
    report = grade_smoke()
    assert report.grading.outcome.value == "pass", report.grading.reasons
    assert counters.OUTPUT_MATCHED in dram_finding(report).evidence
    assert not [f for f in report.integrity if f.check == counters.PROFILED_CHECK]


@pytest.mark.slow
@pytest.mark.parametrize(("kernel_ns", "lead"), [("40,000,000,000", True), ("1,000", False)])
def test_a_timed_median_far_below_the_profiled_kernels_is_a_lead(tmp_path: Path, monkeypatch, kernel_ns, lead):
    """ncu saw one call's kernels take 40 s (or 1 us) while the same shape's timed median is milliseconds on this
    CPU: the timed calls ran other code than the profiled one (a warning, never a verdict: ncu serialises kernels
    and flushes L2, so honest calls take somewhat longer there)."""
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("softmax_kernel", "12,288", "12,000", kernel_ns)])
    report = grade_solution(HONEST, PROBLEMS / "04_kahan_softmax", device="cpu", shapes="smoke", held_out=False)
    assert report.grading.outcome.value == "pass", report.grading.reasons
    found = [f for f in report.integrity if f.check == counters.PROFILED_TIME_CHECK]
    if not lead:
        assert not found
        return
    [warning] = found
    assert (warning.severity, warning.klass) == ("warning", 8)
    assert "shape 1" in warning.message and "40,000.0000 ms" in warning.evidence, warning


def test_the_profiled_time_lead_stands_on_the_ratio_alone():
    call = counters.ProfiledCall(shape_index=2, kernel_ms=2.96, kernels=194)
    assert counters.profiled_time_findings(call, 1.0)  # the red-team case on an H100: 2.96 times
    assert counters.profiled_time_findings(call, 1.45)  # 2.04 times
    assert not counters.profiled_time_findings(call, 1.5)  # 1.97 times: twice the largest honest ratio measured
    assert not counters.profiled_time_findings(call, None)  # the shape was not timed
    assert not counters.profiled_time_findings(call, 0.0)


def _grading_dir(tmp_path: Path, case_id: str, expected: torch.Tensor, inputs: list) -> Path:
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.judge import publish_inputs

    (tmp_path / "check").mkdir(parents=True)
    save_tensors(tmp_path / "check" / f"out_{case_id}.kbt", [expected], single=True)
    publish_inputs(tmp_path / "inputs" / f"in_{case_id}.kbt", inputs)
    return tmp_path


@pytest.mark.parametrize("written", [b"", b"KBT1 not a tensor file", None])
def test_a_profiled_output_that_cannot_be_read_is_the_candidates(tmp_path: Path, written):
    """The probe's output file is written in the candidate's process: missing, empty or garbage, it is an error
    finding against the candidate, never a failure of the grader (which would turn the verdict into a rerun)."""
    from kernelbench.eval.cases import Case

    spec = load_problem_spec(PROBLEMS / "04_kahan_softmax")
    case = Case(id="s0_base_1", shape_index=0, shape={"rows": 2, "vocab": 8}, public_seed=1, seed=1)
    x = torch.randn(2, 8)
    grading = _grading_dir(tmp_path, case.id, torch.softmax(x, -1), [x])
    probe_out = tmp_path / "counters" / counters.PROBE_OUTPUT
    probe_out.parent.mkdir()
    if written is not None:
        probe_out.write_bytes(written)
    [found] = counters.profiled_output_findings(spec, case, probe_out, grading)
    assert (found.check, found.severity, found.klass) == (counters.PROFILED_CHECK, "error", 8)
    assert found.message == counters.PROFILED_MISSING and counters.PROBE_OUTPUT in found.evidence


def test_a_profiled_output_within_tolerance_passes_and_a_wrong_one_does_not(tmp_path: Path):
    from kernelbench.eval.cases import Case
    from kernelbench.eval.tensorfile import save_tensors

    spec = load_problem_spec(PROBLEMS / "04_kahan_softmax")
    case = Case(id="s0_base_1", shape_index=0, shape={"rows": 2, "vocab": 8}, public_seed=1, seed=1)
    x = torch.randn(2, 8)
    expected = torch.softmax(x.double(), -1).float()
    grading = _grading_dir(tmp_path, case.id, expected, [x])
    probe_out = tmp_path / counters.PROBE_OUTPUT
    save_tensors(probe_out, [expected * (1 + 1e-7)], single=True)
    assert counters.profiled_output_findings(spec, case, probe_out, grading) == []
    save_tensors(probe_out, [torch.full_like(expected, 0.125)], single=True)
    [wrong] = counters.profiled_output_findings(spec, case, probe_out, grading)
    assert wrong.message == counters.PROFILED_WRONG and "s0_base_1, shape 0" in wrong.evidence


# PROFILER_AWARE, which also replaces each checked output the judge has compared (a second after it was written)
# by what it returns under the profiler, so that the counter pass, reading the checked output back as the answer
# the checks passed, would find its profiled call matching. The grader's module writes the file only for brevity:
# the format is a magic, a JSON header and raw bytes.
PLANTING = PROFILER_AWARE.replace("import sys\n", """import os
import sys
import time
from pathlib import Path

_planted = set()


def _plant():
    if not os.path.isdir("check") or not os.access("check", os.W_OK):  # the check stage's own out folder
        return
    from kernelbench.eval.tensorfile import load_inputs, save_tensors
    for name in sorted(os.listdir("check")):
        path = Path("check") / name
        if name.startswith("out_") and name not in _planted and time.time() - path.stat().st_mtime > 1.0:
            x = load_inputs(Path("inputs") / ("in_" + name[4:]))[0]
            save_tensors(path, [x.amax(dim=-1, keepdim=True).expand_as(x).contiguous()], single=True)
            _planted.add(name)
""").replace("    def forward(self, x: torch.Tensor) -> torch.Tensor:\n",
             "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        _plant()\n        time.sleep(0.3)\n")


@pytest.mark.slow
def test_checked_outputs_rewritten_after_the_judgement_are_invalid_and_never_read_as_answers(tmp_path: Path,
                                                                                           monkeypatch):
    """It PASSed: the measured call's output 'matched its checked output', the one it had planted. The judge now
    digests each output later stages read again as it compares it, and a file that differs after the check stage
    is the candidate's doing."""
    stand_in_ncu(tmp_path, monkeypatch, "measure", [("reduce_kernel", "12,288", "12,000")])
    solution = tmp_path / "solution" / "solution.py"
    solution.parent.mkdir()
    solution.write_text(PLANTING)
    report = grade_solution(solution, PROBLEMS / "04_kahan_softmax", device="cpu", shapes="smoke", timing=False,
                            held_out=False, lint=False)
    assert report.grading.outcome.value == "invalid", report.grading.reasons
    [rewritten] = [f for f in report.integrity if f.check == "grading_files"]
    assert (rewritten.severity, rewritten.klass) == ("error", 12)
    assert "rewritten after the judge compared them" in rewritten.message
    assert "when judged" in rewritten.evidence and "after the check stage" in rewritten.evidence
    assert not [f for f in report.integrity if f.check == counters.CHECK]  # no pass on the planted answers
