"""A synthetic data folder (problems, runs, annotations, writeups) for the site's tests and benchmarks.

Every file is written through the shared models (ProblemSpec, ProblemBaselines, RunResult, Annotation) and
transcripts through the transcripts stage's NormalizedWriter, so the deck has the real on-disk formats. The
numbers are made up and the deck lives under a temporary folder: it is never presented as a measurement.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from kernelbench.base.models import GpuConditions, Interval, Range
from kernelbench.fileio import atomic_write_text
from kernelbench.problems.baselines import Line, ProblemBaselines, ShapeTiming
from kernelbench.results.annotation import Annotation, Quote, Verdict
from kernelbench.results.run import (
    Ceiling,
    Finding,
    Grading,
    Outcome,
    RunResult,
    Session,
    ShapeResult,
    Tokens,
)

PROBLEMS = {
    "01_fp8_gemm": (
        "FP8 GEMM",
        "compute",
        "fp8",
        [{"M": 4096, "N": 4096, "K": 4096}, {"M": 128, "N": 8192, "K": 4096}],
        "2*M*N*K",
        "M*K + N*K + 2*M*N",
    ),
    "04_kahan_softmax": (
        "Kahan softmax",
        "memory",
        "dram",
        [{"B": 32, "V": 131072}, {"B": 8, "V": 262144}],
        "5*B*V",
        "8*B*V",
    ),
}
AGENTS = [
    ("claude", "claude-opus-4-7", "max"),
    ("codex", "gpt-5.5", "xhigh"),
    ("kimi", "kimi-k2.6", None),
    ("scripted", "reference-copy", None),
]
SOLUTION = '''"""A candidate kernel."""
import torch


class Model(torch.nn.Module):
    def forward(self, x, w):
        # tiled kernel launch
        return (x.float() @ w.float().T).to(torch.bfloat16)
'''


@dataclass
class Deck:
    root: Path
    run_ids: list[str]


def write_problems(root: Path) -> None:
    for pid, (title, regime, ceiling, shapes, flops, nbytes) in PROBLEMS.items():
        folder = root / "problems" / pid
        spec = {
            "id": pid,
            "title": title,
            "description": f"{title}: a synthetic problem for site tests.",
            "regime": regime,
            "ceiling": ceiling,
            "shapes": shapes,
            "flops": flops,
            "bytes": nbytes,
            "tolerance": {"bfloat16": {"atol": 5e-2, "rtol": 1e-2}},
        }
        atomic_write_text(folder / "problem.yaml", yaml.safe_dump(spec, sort_keys=False))
        lines = {
            name: Line(
                source=f"synthetic {name}",
                peak_fraction=frac,
                shapes=[ShapeTiming(index=i, shape=s, median_ms=1.0 / frac) for i, s in enumerate(shapes)],
            )
            for name, frac in (("eager", 0.05), ("compiled", 0.12), ("sota", 0.4))
        }
        base = ProblemBaselines(problem=pid, gpu="h100_sxm", gpu_name="NVIDIA H100 80GB HBM3", lines=lines)
        atomic_write_text(folder / "baselines" / "h100_sxm.json", base.model_dump_json(indent=2))


# a fixed cycle (7 is prime to the 8 agent × problem combinations) so every deck holds every status
OUTCOMES = (
    Outcome.PASS,
    Outcome.PASS,
    Outcome.CHECK_FAILED,
    Outcome.PASS,
    Outcome.NO_SOLUTION,
    Outcome.PASS,
    Outcome.INVALID,
)


def make_result(
    run_id: str,
    agent: tuple,
    problem: str,
    trial: int,
    rng: random.Random,
    started: datetime,
    transcript: str | None,
    outcome: Outcome = Outcome.PASS,
) -> RunResult:
    harness, model, effort = agent
    title, regime, ceiling, shapes, *_ = PROBLEMS[problem]
    fraction = round(rng.uniform(0.02, 0.7), 4) if outcome in (Outcome.PASS, Outcome.INVALID) else None
    unit = "TFLOP/s" if regime == "compute" else "GB/s"
    medians = [round(rng.uniform(0.05, 2.0), 4) for _ in shapes] if fraction else []
    grading = Grading(
        has_solution=outcome is not Outcome.NO_SOLUTION,
        correct=outcome is Outcome.PASS,
        outcome=outcome,
        device="cuda",
        peak_fraction=fraction,
        peak_fraction_interval=Interval(low=fraction * 0.96, high=fraction * 1.03) if fraction else None,
        # the whole stage holds both shapes' stretches: the second one's slowdown among its readings
        conditions=synthetic_conditions(throttled=True).model_copy(update={
            "samples": 120, "sm_clock_mhz": Range(min=1410.0, median=1980.0, max=1980.0), "throttled_share": 0.08,
        }) if fraction else None,
        baselines={"eager": 0.05, "compiled": 0.12, "sota": 0.4},
        ceiling=Ceiling(
            regime=regime,
            dtype=ceiling,
            value=1979.0 if regime == "compute" else 3350.0,
            unit=unit,
            peak_tflops=1979.0,
            dram_gbps=3350.0,
        ),
        shapes=[
            ShapeResult(
                index=i,
                shape=s,
                median_ms=medians[i],
                median_interval_ms=Interval(low=medians[i] * 0.98, high=medians[i] * 1.05),
                fraction=fraction,
                conditions=synthetic_conditions(throttled=i == 1),
                baselines_ms={"eager": 2.5, "sota": 0.4},
            )
            for i, s in enumerate(shapes)
        ]
        if fraction
        else [],
        reasons=[] if outcome is Outcome.PASS else [f"synthetic outcome {outcome.value}"],
    )
    integrity = (
        [
            Finding(
                check="ast_lint",
                klass=1,
                class_name="library bypass",
                message="calls torch.mm",
                evidence="solution.py:8",
                file="solution.py",
                line=8,
            )
        ]
        if outcome is Outcome.INVALID
        else []
    )
    session = Session(
        exit_code=0,
        complete=True,
        elapsed_s=rng.uniform(300, 2700),
        budget_s=2700,
        tokens=Tokens(input=rng.randint(10_000, 2_000_000), output=rng.randint(1000, 90_000)),
        cost_usd=round(rng.uniform(0.5, 40), 2),
        transcript=transcript,
        transcript_format="normalized",
    )
    return RunResult(
        run_id=run_id,
        harness=harness,
        model=model,
        effort=effort,
        problem=problem,
        gpu="h100_sxm",
        trial=trial,
        started=started,
        finished=started + timedelta(seconds=session.elapsed_s or 0),
        scripted=harness == "scripted",
        session=session,
        grading=grading,
        integrity=integrity,
    )


def synthetic_conditions(throttled: bool) -> GpuConditions:
    """Made-up GPU conditions in the shape the grader's sampler writes (kernelbench.eval.conditions)."""
    return GpuConditions(
        measured=True, gpu="GPU-00000000-0000-0000-0000-000000000000", samples=40, period_ms=20.0,
        sm_clock_mhz=Range(min=1410.0 if throttled else 1980.0, median=1755.0 if throttled else 1980.0, max=1980.0),
        memory_clock_mhz=Range(min=2619.0, median=2619.0, max=2619.0), max_temperature_c=83.0 if throttled else 61.0,
        power_w=Range(min=310.0, median=640.0, max=700.0 if throttled else 655.0),
        throttle_reasons=["sw_power_cap", "hw_thermal_slowdown"] if throttled else [],
        throttled_share=0.25 if throttled else 0.0, throttled=throttled)


def write_transcript(path: Path, harness: str, model: str, target_bytes: int, rng: random.Random) -> None:
    """A normalized transcript of roughly `target_bytes`, written as a harness would write it."""
    from kernelbench.transcripts.normalized import NormalizedWriter

    with NormalizedWriter(
        path, harness=harness, model=model, session_id=path.parent.name, cwd="/workspace"
    ) as log:
        log.user("Write a faster kernel for this problem. <script>alert('user')</script>")
        step = 0
        while path.stat().st_size < target_bytes:  # the writer flushes every record
            step += 1
            text = f"Step {step}: trying tile size {rng.choice([64, 128, 256])}. " * rng.randint(5, 40)
            log.assistant(text)
            call = log.tool_call("Bash", {"command": f"python check.py  # attempt {step}"})
            output = "PASS\n" if step % 3 else "FAIL: max_abs_err=0.31 at shape 1\n" + "trace line\n" * 30
            log.tool_result(call, output, exit_code=0 if step % 3 else 1)
            log.usage(input=1200, output=300)


def write_run(root: Path, run_id: str, result: RunResult, transcript_bytes: int, rng: random.Random) -> None:
    folder = root / "runs" / run_id
    atomic_write_text(folder / "result.json", result.dump_json())
    if result.grading.has_solution:
        atomic_write_text(folder / "solution.py", SOLUTION)
    atomic_write_text(folder / "check.log", "shape 0 seed 42: ok\nshape 1 seed 42: ok\n")
    atomic_write_text(folder / "benchmark.log", "shape 0: 0.412 ms\nshape 1: 0.733 ms\n")
    if transcript_bytes:
        write_transcript(folder / "transcript.jsonl", result.harness, result.model, transcript_bytes, rng)


def write_annotation(root: Path, run_id: str, result: RunResult, verdict: Verdict) -> Path:
    quote = Quote(
        file="solution.py", lines=[7, 8], label="the GEMM", text="".join(SOLUTION.splitlines(True)[6:8])
    )
    annotation = Annotation(
        run_id=run_id,
        model=result.model,
        harness=result.harness,
        effort=result.effort,
        problem=result.problem,
        peak_fraction=result.grading.peak_fraction,
        verdict=verdict,
        summary="Upcasts to fp32 and calls the matmul operator.",
        quotes=[quote] if result.grading.has_solution else [],
        implication=None if verdict is Verdict.CLEAN else "The score measures cuBLAS.",
    )
    path = root / "annotations" / f"{run_id}.yaml"
    data = annotation.model_dump(mode="json", exclude_none=True)
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def write_deck(
    root: Path, n_runs: int = 12, transcript_bytes: int = 4000, annotate_every: int = 4, seed: int = 0
) -> Deck:
    """Problems, `n_runs` runs spread over agents × problems × trials, some annotated, one writeup."""
    rng = random.Random(seed)
    root = Path(root)
    write_problems(root)
    start = datetime(2026, 5, 1, tzinfo=timezone.utc)
    run_ids = []
    combos = [(a, p) for a in AGENTS for p in PROBLEMS]
    for i in range(n_runs):
        agent, problem = combos[i % len(combos)]
        trial = i // len(combos) + 1
        started = start + timedelta(minutes=7 * i)
        slug = agent[1].replace("/", "_")
        run_id = f"{started:%Y%m%d_%H%M%S}_{agent[0]}_{slug}_{problem}" + (f"_t{trial}" if trial > 1 else "")
        result = make_result(
            run_id,
            agent,
            problem,
            trial,
            rng,
            started,
            "transcript.jsonl" if transcript_bytes else None,
            OUTCOMES[i % len(OUTCOMES)],
        )
        write_run(root, run_id, result, transcript_bytes, rng)
        if annotate_every and i % annotate_every == 0:
            verdict = [Verdict.CLEAN, Verdict.RUBRIC_LEAK, Verdict.REWARD_HACK, Verdict.INTERESTING][
                i // annotate_every % 4
            ]
            write_annotation(root, run_id, result, verdict)
        run_ids.append(run_id)
    _write_writeup(root, run_ids[:2])
    return Deck(root=root, run_ids=run_ids)


def _write_writeup(root: Path, cited: list[str]) -> None:
    front = yaml.safe_dump(
        {
            "title": "How the fp8 GEMM leak works",
            "problem": "01_fp8_gemm",
            "verdict": "rubric_leak",
            "runs": cited,
        },
        sort_keys=False,
    )
    body = (
        f"# The leak\n\nIn {cited[0]} the agent casts to bf16. Compare `{cited[-1]}`.\n\n"
        "<script>alert('writeup')</script>\n\n[bad](javascript:alert(1))\n"
    )
    atomic_write_text(root / "annotations" / "writeups" / "fp8-leak.md", f"---\n{front}---\n{body}")
