"""The hardware-counter check on a GPU: honest solutions must clear it, sub-sampling and memoisation must not.

    python benchmarks/integrity_counters_gpu.py --out $OUT [--budget-s 360] [--only LABEL_WORDS...]

Part 1 runs the grading step itself (`counters.counter_check`: probe shape, warm-up over rotating input sets,
one call under ncu, the verdict) on full shapes, from a scratch grading folder laid out as the stages leave it
(timing inputs published by the judge's own writer, the checked output beside them), so cases that correctness
would stop first are measured too. Part 2 grades two solutions end to end (`grade_solution`, CUDA, full shapes
without the timing stage), where the pass runs after the checks as in every grading. Prints a table and writes it, with
every finding and ncu's log, under --out. About 6 minutes on an H100; --only picks rows by label words.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CASES = REPO / "tests" / "integrity" / "cases"
TRITON = REPO / "solutions" / "triton"
# (label, solution, problem, what must happen): "pass" = no error finding, "caught" = an error finding
PROBES = [
    *[(f"honest triton {p}", TRITON / f"{p}.py", p, "pass") for p in (
        "04_kahan_softmax", "03_paged_attention", "05_topk_bitonic", "07_w4a16_gemm", "09_add_rmsnorm_fp8_quant")],
    ("honest eager 04", REPO / "solutions" / "eager" / "04_kahan_softmax.py", "04_kahan_softmax", "pass"),
    ("memo: pointer + sampled values", CASES / "07_memo_sampled_key.py", "04_kahan_softmax", "caught"),
    ("memo: pointer", CASES / "07_memo_pointer.py", "04_kahan_softmax", "caught"),
    ("memo: rotation (class 15)", CASES / "15_cached_rotation.py", "04_kahan_softmax", "caught"),
    ("sub-sample: even rows, one kernel", CASES / "05_triton_half_rows.py", "04_kahan_softmax", "caught"),
    ("sub-sample: even rows, eager", CASES / "05_every_other_row.py", "04_kahan_softmax", "caught"),
    ("host computes, copies back", CASES / "09_host_work.py", "04_kahan_softmax", "either"),
]
LATER = [  # after the gradings, while the budget lasts: compute-bound problems must not false-positive either
    ("honest triton 01 (compute)", TRITON / "01_fp8_gemm.py", "01_fp8_gemm", "pass"),
    ("honest triton 08 (compute)", TRITON / "08_gqa_prefill_attention.py", "08_gqa_prefill_attention", "pass"),
    ("honest triton 06 (compute)", TRITON / "06_sonic_moe_swiglu.py", "06_sonic_moe_swiglu", "pass"),
    ("honest triton 02 (compute)", TRITON / "02_kda.py", "02_kda", "pass"),
]
# full shapes: the pass probes the smallest full shape, and smoke inputs (a few KB) sit below anything DRAM
# counters can judge (the memoiser passed a smoke-shape grading on the H100)
GRADINGS = [  # (label, solution, problem, shapes, what must happen)
    ("graded: honest triton 04", TRITON / "04_kahan_softmax.py", "04_kahan_softmax", "full", "pass"),
    ("graded: memo pointer + sampled values", CASES / "07_memo_sampled_key.py", "04_kahan_softmax", "full",
     "caught"),
]


HEADER = ("| solution | outcome | finding | must read MB | DRAM read MB | read / must | kernels | wall s | expected | "
          "verdict |")


def scratch_grading(problem_dir: Path, workdir: Path, device: str) -> list:
    """The files the stages leave for the pass: every shape's timing inputs, and shape outputs from the reference
    (the candidate's checked outputs have the same dtypes and shapes, or correctness would have failed)."""
    import torch

    from kernelbench.eval.cases import Case
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.context import build_model
    from kernelbench.eval.worker.judge import publish_inputs
    from kernelbench.problems.loader import load_module
    from kernelbench.problems.loader import load_problem_spec

    spec = load_problem_spec(problem_dir)
    reference = load_module(problem_dir / "reference.py", "reference")
    (workdir / "inputs").mkdir(parents=True)
    (workdir / "check").mkdir()
    from kernelbench.eval.integrity.counters import probe_shape

    index = probe_shape(spec, dict(enumerate(spec.shapes)))
    shape = spec.shapes[index]
    cases = [Case(id=f"s{index}_t{k}", shape_index=index, shape=shape, public_seed=k, seed=1000 + k)
             for k in range(spec.timing.input_sets)]
    model = build_model(torch, torch.device(device), reference, None, 7, shape)
    for case in cases:
        inputs = reference.get_inputs(shape, case.seed, "cpu")
        publish_inputs(workdir / "inputs" / f"in_{case.id}.kbt", inputs)
    with torch.no_grad():
        out = model(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in
                      reference.get_inputs(shape, cases[0].seed, "cpu")])
    items = [out] if isinstance(out, torch.Tensor) else list(out)
    save_tensors(workdir / "check" / f"out_{cases[0].id}.kbt", items, single=isinstance(out, torch.Tensor))
    del model, out, items
    torch.cuda.empty_cache() if device == "cuda" else None
    return cases


def probe(solution: Path, problem: str, device: str, limit_s: float) -> dict[str, Any]:
    from kernelbench.eval.integrity import counters
    from kernelbench.eval.process import worker_env
    from kernelbench.problems.loader import load_problem_spec

    problem_dir = REPO / "problems" / problem
    spec = load_problem_spec(problem_dir)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kb-counters-") as tmp:
        cases = scratch_grading(problem_dir, Path(tmp), device)
        target = counters.ProbeTarget(problem_dir, solution, Path(tmp), device, {cases[0].shape_index: 7},
                                      worker_env(device))
        [found] = counters.counter_check(spec, target, cases, limit_s)
        log = (Path(tmp) / "counters" / "ncu.log")
        ncu_log = log.read_text(errors="replace")[-1500:] if log.is_file() else ""
    return {"finding": found.model_dump(by_alias=True), "wall_s": round(time.monotonic() - started, 1),
            "ncu_log_tail": ncu_log}


def graded(solution: Path, problem: str, shapes: str, device: str) -> dict[str, Any]:
    from kernelbench.eval.grade import grade_solution

    started = time.monotonic()
    report = grade_solution(solution, REPO / "problems" / problem, device=device, shapes=shapes,
                            timing=shapes == "smoke")
    found = [f.model_dump(by_alias=True) for f in report.integrity if f.check == "dram_bytes"]
    return {"outcome": report.grading.outcome.value, "reasons": report.grading.reasons[:3],
            "finding": found[0] if found else None, "stages": report.stages,
            "wall_s": round(time.monotonic() - started, 1)}


def verdict(finding: dict[str, Any] | None, want: str) -> str:
    if finding is None:
        return "no finding"
    caught = finding["severity"] == "error"
    if finding["severity"] != "error" and "not run" in finding["message"]:
        return "NOT RUN"
    ok = {"pass": not caught, "caught": caught, "either": True}[want]
    return "ok" if ok else "WRONG"


def row(label: str, result: dict[str, Any], want: str) -> str:
    f = result.get("finding") or {}
    ev = f.get("evidence", "")
    read = _number_after(ev, "dram__bytes_read.sum ")
    must = _number_after(ev, "must read ")
    ratio = f"{read / must:.2f}" if read is not None and must else "-"
    outcome = result.get("outcome") or result.get("error", "")[:100]
    return (f"| {label} | {outcome or '-'} | {f.get('severity', '-')}/{f.get('class', '-')} | "
            f"{_mb(must)} | {_mb(read)} | {ratio} | {_kernels(ev)} | {result.get('wall_s')} | {want} | "
            f"{verdict(result.get('finding'), want)} |")


def _number_after(text: str, marker: str) -> float | None:
    at = text.find(marker)
    if at < 0:
        return None
    token = text[at + len(marker):].split(" ", 1)[0].replace(",", "")
    try:
        return float(token)
    except ValueError:
        return None


def _mb(value: float | None) -> str:
    return f"{value / 1e6:.2f}" if value is not None else "-"


def _kernels(evidence: str) -> str:
    at = evidence.find(" kernel(s)")
    return evidence[:at].rsplit(" ", 1)[-1] if at > 0 else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=360.0, help="stop starting new probes after this")
    parser.add_argument("--limit-s", type=float, default=60.0, help="the pass's limit here (grading default: 30)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a dry run (no ncu)")
    parser.add_argument("--only", nargs="*", default=[], help="labels containing any of these (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: dict[str, Any] = {}
    rows = [HEADER, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def chosen(label: str) -> bool:
        return not args.only or any(word in label for word in args.only)

    def over_budget(label: str, want: str) -> bool:
        if time.monotonic() - started <= args.budget_s:
            return False
        rows.append(f"| {label} | not run (budget) | | | | | | | {want} | NOT RUN |")
        return True

    def run_probes(probes: list) -> None:
        for label, solution, problem, want in filter(lambda p: chosen(p[0]), probes):
            if over_budget(label, want):
                continue
            try:
                results[label] = probe(solution, problem, args.device, args.limit_s)
            except Exception as exc:  # noqa: BLE001  (one broken probe must not hide the others' figures)
                results[label] = {"error": f"{type(exc).__name__}: {exc}"}
            rows.append(row(label, results[label], want))
            print(rows[-1], flush=True)

    run_probes(PROBES)
    for label, solution, problem, shapes, want in filter(lambda g: chosen(g[0]), GRADINGS):
        if not over_budget(label, want):
            results[label] = graded(solution, problem, shapes, args.device)
            rows.append(row(label, results[label], want))
            print(rows[-1], flush=True)
    run_probes(LATER)
    text = "\n".join(rows)
    (args.out / "integrity_counters.md").write_text(text + "\n")
    (args.out / "integrity_counters.json").write_text(json.dumps(
        {"results": results, "elapsed_s": round(time.monotonic() - started, 1)}, indent=1))
    print(text)
    print(f"elapsed {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
