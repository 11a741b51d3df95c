"""The trusted grading entry point (contract 3).

Order: integrity lint → check stage (candidate, fresh process) → reference stage (fresh process) → the parent
compares → on CUDA, one hardware-counter pass (ncu, fresh process) → bench stage (candidate, fresh process,
every timed output judged like a checked one, stress inputs mixed into the timed rotation) → roofline → integrity
gates.
The parent never imports the solution; it decides the verdict from files the stages saved.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.errors import KernelBenchError
from kernelbench.eval import verdict
from kernelbench.eval.cases import Case, build_cases, mix_seed, secret_seed, timed_stress_cases
from kernelbench.eval.environment import collect_environment, profile_from_info
from kernelbench.eval.isolation import isolation_for
from kernelbench.eval.process import StageHandle, StageRun, finish_stage, start_stage
from kernelbench.eval.roofline import ceiling_of, faster_than_light, geometric_mean, score_shape
from kernelbench.eval.worker import CANDIDATE_ROLES, DONE_MARKER
from kernelbench.fileio import atomic_write_text
from kernelbench.problems.loader import PROBLEM_FILES, file_hashes, pristine_copy, problem_hash, shapes_for
from kernelbench.problems.spec import ProblemSpec, load_problem_spec
from kernelbench.results.run import Environment, Finding, Grading, Outcome, SeedResult, ShapeResult

SHM_MIN_FREE = 16 << 30
CPU_WARMUP, CPU_TRIALS = 1, 3
# Limits stop hangs; they are not a speed test. The check stage's was 300 s until the slowest honest line, a
# Python-loop GQA rewrite (eager 08, ~60k ops a call), took 271 s of it on the H100 once its checked calls were
# launch-audited (benchmarks/results/h100_integrity_session5.md): an honest slow rewrite must not fail on time.
STAGE_LIMITS_S = {"check": 600.0, "reference": 300.0, "bench": 420.0, "counters": 30.0, "fresh": 300.0}
# Timed calls per shape whose outputs (on fresh inputs, chosen after each call returned) the judge checks
# afterwards: each costs a reference call (and an fp64 oracle where the problem needs one) in a trusted process.
FRESH_KEPT_PER_SHAPE = 2
WORKSPACE_TEMPLATES = ("check.py", "benchmark.py", "reference.py", "problem.yaml", "PROMPT.txt")


class GradeReport(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    grading: Grading
    integrity: list[Finding] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)
    check_log: str = ""
    benchmark_log: str = ""
    # wall seconds per grading stage, and the judge's own steps as judge.<step> (where a grading spends its time)
    stages: dict[str, float] = Field(default_factory=dict)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True) + "\n"


class Grader:
    """State of one grading; each method is one stage of the order above."""

    def __init__(self, solution: Path, problem_dir: Path, device: str, shapes_mode: str, line: str,
                 limits: dict[str, float], lint: bool, workdir: Path):
        self.solution, self.problem_dir, self.device, self.mode, self.line = solution, problem_dir, device, \
            shapes_mode, line
        self.limits, self.lint, self.workdir = limits, lint, workdir
        self.spec: ProblemSpec = load_problem_spec(problem_dir)
        self.grading = Grading(device=device, shapes_mode=shapes_mode, has_solution=True)
        self.findings: list[Finding] = []
        self.check_log: list[str] = []
        self.bench_log: list[str] = []
        self.secret = secret_seed()
        self.timed = False
        self.fresh_unjudged = ""          # why the kept fresh-input calls could not be judged, if they could not
        self.shapes = shapes_for(self.spec, shapes_mode)
        self.timed_next = True            # the bench stage will follow: keep its cases' files
        self.counters = True              # the hardware-counter pass on CUDA gradings (grade_solution(counters=))
        self.cases = build_cases(self.spec, self.shapes, self.secret, shapes_mode)
        self.timed_stress: list[Case] = []  # stress cases mixed into the timed rotation (add_timed_stress)
        self.error_sizes: dict[str, list] = {}  # the judge's error sizes per oracle case, for the timed calls
        self.profile = None               # known once the judge has reported the device
        self.device_info: dict[str, Any] = {}
        self.pristine = pristine_copy(problem_dir, workdir / "problem")
        self.module = self._copy_solution()
        self.build_env = _build_env(workdir / "build")
        self.isolation = isolation_for(device)
        (workdir / "inputs").mkdir()
        self.launches: dict[str, float] = {}
        self.stages: dict[str, float] = {}
        self.pristine_hashes = file_hashes(self._pristine_files())

    def _pristine_files(self) -> list[Path]:
        return [self.pristine / n for n in PROBLEM_FILES if (self.problem_dir / n).is_file()]

    def clock(self, name: str, started: float) -> None:
        self.stages[name] = round(self.stages.get(name, 0.0) + time.monotonic() - started, 3)

    def _copy_solution(self) -> Path:
        target = self.workdir / "solution" / self.solution.name
        target.parent.mkdir(parents=True)
        shutil.copy2(self.solution, target)
        return target

    def job(self, stage: str, cases: list[Case], **extra: Any) -> dict[str, Any]:
        return {"problem_dir": str(self.pristine), "module": str(self.module), "line": self.line,
                "device": self.device, "cases": [c.model_dump() for c in cases],
                "out_dir": str(self.workdir / stage), "inputs_dir": str(self.workdir / "inputs"),
                "model_seeds": {str(i): mix_seed(0, self.secret, i, "weights") for i in range(len(self.shapes))},
                "tolerance": {k: v.model_dump() for k, v in self.spec.tolerance.items()},
                "timing": self.timing_settings(), "l2_bytes": None,
                **extra}

    def timing_settings(self) -> dict[str, Any]:
        """The problem's protocol on a GPU; on the CPU (CI, smoke shapes) a few calls exercise the same logic."""
        settings = self.spec.timing.model_dump()
        cap = settings.pop("shape_seconds")
        settings["max_seconds"] = self.limits.get("shape_seconds") or cap
        if self.device == "cpu":
            settings.update(warmup=min(settings["warmup"], CPU_WARMUP), trials=min(settings["trials"], CPU_TRIALS),
                            max_trials=min(settings["max_trials"], CPU_TRIALS), stderr_target=0.0)
        return settings

    def note_device(self, result: dict[str, Any]) -> None:
        self.device_info = result.get("device_info", {})
        self.profile = profile_from_info(self.device_info)
        if self.device == "cuda" and self.profile is None:
            self.check_log.append(f"[hardware] {self.device_info.get('name')} matches no profile: no roofline")

    def start(self, name: str, cases: list[Case], role: str | None = None, **extra: Any) -> StageHandle:
        role = role or name
        return start_stage(role, self.job(name, cases, **extra), device=self.device, cwd=self.workdir,
                           extra_env=self.build_env, sandbox=self.isolation if role in CANDIDATE_ROLES else None)

    def finish(self, handle: StageHandle, limit_s: float, partner: StageHandle | None = None) -> StageRun:
        """End a stage; with a partner (the judge beside the check stage), a partner that ends first stops the
        stage after a short grace instead of leaving it to its full limit."""
        stopped = partner is not None and wait_either(handle, partner, limit_s)
        run = finish_stage(handle, limit_s if not stopped else time.monotonic() - handle.started + PARTNER_GRACE_S)
        if stopped and run.timed_out:
            run.error = (f"{run.role} stage stopped {PARTNER_GRACE_S:g} s after the judge had finished (it was "
                         "waiting for something that will not come, e.g. grading files it deleted)")
        log = self.bench_log if run.role == "bench" else self.check_log
        log.append(f"[{run.role} stage: {run.elapsed_s:.1f} s, exit {run.returncode}]")
        if run.output.strip():
            log.append(f"[{run.role} stage output, ignored by the grader]\n{run.output.rstrip()}")
        if run.error:
            log.append(f"[{run.role} stage] {run.error}")
        return run

    def stage(self, name: str, cases: list[Case], role: str | None = None, **extra: Any) -> StageRun:
        limit = self.limits["reference" if name == "judge" else name]
        run = self.finish(self.start(name, cases, role, **extra), limit)
        self.stages[name] = round(self.stages.get(name, 0.0) + run.elapsed_s, 3)
        return run

    # ------------------------------------------------------------------------------------------- stages

    def run_lint(self) -> None:
        if not self.lint:
            return
        started = time.monotonic()
        try:
            from kernelbench.eval.integrity import lint_solution
        except ImportError as exc:
            self.check_log.append(f"[lint] static checks unavailable: {exc}")
            return
        found = lint_solution(self.solution, self.spec)
        self.findings += found
        for f in found:
            self.check_log.append(f"[lint] {f.severity.upper()} class {f.klass}: {f.message} ({f.evidence})")
        self.clock("lint", started)

    def run_correctness(self) -> bool:
        """The judge and the candidate's check stage run side by side; inputs flow to the candidate as files,
        outputs flow back as files, expected values never leave the judge's memory."""
        started = time.monotonic()
        check_dir = self.workdir / "check"
        keep = [c.id for c in self.timing_cases() + self.timed_stress] if self.timed_next else []
        judge = self.start("judge", self.cases, check_dir=str(check_dir), keep_ids=keep)
        check = self.finish(self.start("check", self.cases), self.limits["check"], partner=judge)
        check_dir.mkdir(exist_ok=True)
        (check_dir / DONE_MARKER).touch()
        judged = self.finish(judge, self.limits["check"] + self.limits["reference"])
        self.stages["check"], self.stages["judge"] = round(check.elapsed_s, 3), round(judged.elapsed_s, 3)
        self.clock("correctness", started)
        if judged.result is None:
            raise KernelBenchError(f"the reference failed to run: {judged.error}", path=self.problem_dir,
                                   hint="run `kernelbench problem check` on this problem")
        self.note_device(judged.result)
        self.stages.update({f"judge.{k}": round(v, 3) for k, v in judged.result.get("clock", {}).items()})
        self._republished_findings(judged.result.get("republished", []))
        if check.result is None:
            self.grading.reasons.append(check.error)
            self._check_stage_findings(check)
        self._candidate_process_findings("check", check.result)
        records = (check.result or {}).get("cases", {})
        for case in self.cases:
            self.error_sizes[case.id] = (judged.result["cases"].get(case.id) or {}).get("error_size") or []
            try:
                seed_result, found = verdict.judge_case(case, records.get(case.id),
                                                        judged.result["cases"].get(case.id))
            except verdict.ReferenceFailed as exc:
                raise KernelBenchError(f"the reference failed: {exc}", path=self.problem_dir / "reference.py")
            self.grading.checks.append(seed_result)
            self.findings += found
            self._log_case(case, seed_result)
        self._collect_launches(records)
        failed = [c for c in self.grading.checks if not c.passed]
        if failed:
            self.grading.reasons.append(f"{len(failed)} of {len(self.grading.checks)} checks failed; first: "
                                        f"shape {failed[0].shape_index} {failed[0].case}: {failed[0].message}")
        return not failed and check.result is not None

    def _republished_findings(self, case_ids: list[str]) -> None:
        if case_ids:
            self.findings.append(verdict.finding(
                "grading_files", 12, "the candidate deleted the inputs the judge had published for it; the judge "
                "published them again", f"cases {', '.join(sorted(set(case_ids)))}"))

    def check_pristine_copy(self) -> None:
        """The problem files the stages import must be the ones copied before grading; a candidate that deleted
        or edited them is reported and the copy rebuilt from the bytes read before grading."""
        after = file_hashes(self._pristine_files())
        changed = [Path(k).name for k, v in after.items() if v != self.pristine_hashes[k]]
        if not changed:
            return
        self.findings.append(verdict.finding("grading_files", 12, "the grader's copy of the problem files was "
                                             "deleted or edited during grading", ", ".join(changed)))
        pristine_copy(self.problem_dir, self.workdir / "problem")

    def _collect_launches(self, records: dict[str, Any]) -> None:
        for record in records.values():
            for name, t in (record.get("launches") or {}).items():
                self.launches[name] = self.launches.get(name, 0.0) + t

    def run_launch_checks(self) -> None:
        """What actually ran: forbidden libraries (launch audit) and, for FP8 problems, FP8 tensor-core code."""
        for name in self.compiled_kernels():
            self.launches.setdefault(name, 0.0)
        if not self.lint or not self.launches:
            return
        try:
            from kernelbench.eval.integrity import launch_audit
        except ImportError as exc:
            self.check_log.append(f"[launch audit] unavailable: {exc}")
            return
        self._add_findings("launch audit", launch_audit(list(self.launches), self.spec))
        if needs_sass_check(self.spec) and self.device == "cuda":
            from kernelbench.eval.integrity.sass import collect_sass, fp8_sass_check

            started = time.monotonic()
            roots = [Path(p) for p in self.build_env.values()] + [self.solution.parent]
            kernels, errors = collect_sass(roots)
            required = required_sass(self.spec, self.device_info)
            self._add_findings("fp8 sass", fp8_sass_check(self.launches, kernels, errors, required=required))
            self.clock("sass", started)

    def _add_findings(self, label: str, found: list[Finding]) -> None:
        self.findings += found
        for f in found:
            self.check_log.append(f"[{label}] {f.severity.upper()} class {f.klass}: {f.message} ({f.evidence})")

    def _candidate_process_findings(self, stage: str, result: dict[str, Any] | None) -> None:
        """What the candidate stage's own guards reported (worker.run_candidate_role), whatever its end."""
        self._namespace_findings(stage, (result or {}).get("namespace_changes", []))
        self._introspection_findings(stage, (result or {}).get("introspection", []))

    def _introspection_findings(self, stage: str, refused: list[str]) -> None:
        """The worker's audit hook refused the solution's reach for frames or live objects
        (kernelbench.eval.integrity.introspection)."""
        if refused:
            self.findings.append(verdict.finding(
                "introspection", 8, f"{stage} stage: solution code reached for the interpreter's stack frames or live "
                f"objects at run time ({len(refused)} attempt(s), refused)", "; ".join(refused[:4])[:2000]))

    def _namespace_findings(self, stage: str, changes: list[str]) -> None:
        """The worker's watch over the grader's own code and the library functions it calls saw them changed
        while the candidate was loaded (kernelbench.eval.integrity.namespaces)."""
        if changes:
            shown = "; ".join(changes[:6]) + (f"; and {len(changes) - 6} more" if len(changes) > 6 else "")
            self.findings.append(verdict.finding(
                "namespace_watch", 11, f"{stage} stage: code the grader runs beside the candidate was changed at run "
                f"time ({len(changes)} name(s) replaced, deleted or rewritten in place)", shown[:2000]))

    def _check_stage_findings(self, run: StageRun) -> None:
        if run.result is None and "signature" in run.error:
            self.findings.append(verdict.finding("trusted_channel", 11, run.error))

    def _log_case(self, case: Case, result: SeedResult) -> None:
        status = "PASS" if result.passed else "FAIL"
        err = f" max_abs_err={result.max_abs_err:.3g}" if result.max_abs_err is not None else ""
        self.check_log.append(f"{status} shape {case.shape_index} {case.shape} {case.label} seed {case.public_seed}"
                              f"{err}" + (f"\n    {result.message}" if result.message else ""))

    def timing_cases(self) -> list[Case]:
        base = [c for c in self.cases if c.label == "base"]
        per_shape = self.spec.timing.input_sets
        return [c for i in range(len(self.shapes)) for c in [b for b in base if b.shape_index == i][:per_shape]]

    def add_timed_stress(self) -> None:
        """Stress inputs with every timed shape, checked like the other cases and then mixed into the timed
        rotation at secret positions: a candidate that changes what it computes once it believes it is timed
        meets them there (cases.timed_stress_cases)."""
        self.timed_stress = timed_stress_cases(self.spec, self.shapes, self.secret, self.cases, self.mode)
        known = {c.id for c in self.cases}
        self.cases += [c for c in self.timed_stress if c.id not in known]

    def run_timing(self) -> None:
        self.timed = True
        missing = self.missing_timing_files()
        if missing:
            self.findings.append(verdict.finding("grading_files", 12, "files the bench stage needs were deleted "
                                                 "during the check stage; nothing could be timed", missing[0]))
            self.grading.reasons.append(f"timing skipped: {len(missing)} grading files were deleted")
            return
        bench = self.stage("bench", self.timing_cases() + self.timed_stress,
                           expected_dir=str(self.workdir / "check"), expected_prefix="out", judge_timed=True,
                           rotation_seed=mix_seed(0, self.secret, "rotation"), fresh_kept=FRESH_KEPT_PER_SHAPE,
                           error_sizes={c.id: self.error_sizes.get(c.id, []) for c in self.timing_cases()})
        self._candidate_process_findings("bench", bench.result)
        if bench.result is None or "shapes" not in bench.result:  # killed, unsigned, or failed before timing
            self.grading.reasons.append(bench.error or "the bench stage returned no timings")
            return
        for index, shape in enumerate(self.shapes):
            self.grading.shapes.append(self._shape_result(index, shape, bench.result["shapes"].get(str(index), {})))
        self.audit_timed_launches(bench.result["shapes"])
        self.check_pristine_copy()  # the fresh stage imports the problem copy a candidate stage could reach
        self.judge_fresh_calls(bench.result["shapes"])

    def judge_fresh_calls(self, shapes: dict[str, Any]) -> None:
        """The timed calls kept on fresh inputs (portable.fresh), judged against the reference by a trusted
        process; unjudged timings are not published (the grading is then a benchmark failure)."""
        records = [r for raw in shapes.values() if isinstance(raw, dict) for r in raw.get("fresh_kept") or []]
        self._refused_kept_outputs(records)
        records = [r for r in records if "file" in r]
        if not records:
            return
        run = self.stage("fresh", self.timing_cases(), bench_dir=str(self.workdir / "bench"), fresh=records,
                         line="candidate")
        self.stages.update({f"fresh.{k}": round(v, 3) for k, v in ((run.result or {}).get("clock") or {}).items()})
        verdicts = (run.result or {}).get("fresh")
        if verdicts is None or any("reference_error" in v for v in verdicts):
            error = run.error if verdicts is None else next(v["reference_error"] for v in verdicts
                                                            if "reference_error" in v)
            self.fresh_unjudged = f"the timed calls on fresh inputs could not be judged: {error.splitlines()[0]}"
            self.grading.reasons.append(self.fresh_unjudged)
            return
        cases = {c.id: c for c in self.timing_cases()}
        for record, judged in zip(records, verdicts):
            self._fresh_verdict(cases[record["case"]], record, judged)

    def _fresh_verdict(self, case: Case, record: dict[str, Any], judged: dict[str, Any]) -> None:
        where = f"shape {case.shape_index}, timed call {record['call']} of {record['of']}"
        self.findings += [Finding.model_validate(f) for f in judged.get("integrity", [])]
        labelled = case.model_copy(update={"id": f"{case.id} ({where})"})
        for size in judged.get("error_size") or []:
            self.findings += [f for f in verdict.error_size_findings(labelled, size) if f.severity == "error"]
        if not judged.get("passed"):
            messages = judged.get("messages") or ["no output could be compared"]
            self.findings.append(verdict.finding(
                "fresh_inputs", 8, f"{where}: on fresh inputs (drawn just before the call, unseen by any earlier "
                "call) the output was wrong though the checked calls were right", messages[0][:500]))
        self.bench_log.append(f"shape {case.shape_index}: fresh-input call {record['call']} of {record['of']} "
                              f"judged: {'ok' if judged.get('passed') else 'WRONG'}")

    def _refused_kept_outputs(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            if "type_error" in record:
                self.findings.append(verdict.finding(
                    "fresh_inputs", 10, f"a timed call on fresh inputs (call {record['call']} of {record['of']}) "
                    "returned an output the grader refuses", record["type_error"][:500]))

    def compiled_kernels(self) -> list[str]:
        """Kernels torch.compile generated so far, named after what they compute (integrity.compiled)."""
        from kernelbench.eval.integrity.compiled import compiled_kernel_names

        return compiled_kernel_names(self.build_env.get("TORCHINDUCTOR_CACHE_DIR"))

    def audit_timed_launches(self, shapes: dict[str, Any]) -> None:
        """The launch audit of the timed calls (CPU gradings record them): only what the checked calls did not
        already show, so a library seen in both is reported once."""
        timed = {name for raw in shapes.values() if isinstance(raw, dict) for name in raw.get("launches") or {}}
        timed |= set(self.compiled_kernels())
        fresh = sorted(timed - set(self.launches))
        if not self.lint or not fresh:
            return
        from kernelbench.eval.integrity import launch_audit
        from kernelbench.eval.integrity.launches import seen_in

        found = seen_in(launch_audit(fresh, self.spec), "in the timed calls only")
        self._add_findings("launch audit, timed calls", found)

    def missing_timing_files(self) -> list[str]:
        """The timed cases' inputs and checked outputs (the bench stage would wait for them until its limit)."""
        paths = []
        for case in self.timing_cases() + self.timed_stress:
            paths += [self.workdir / "inputs" / f"in_{case.id}.kbt", self.workdir / "check" / f"out_{case.id}.kbt"]
        return [p.name for p in paths if not p.is_file()]

    def _shape_result(self, index: int, shape: dict, raw: dict[str, Any]) -> ShapeResult:
        result = ShapeResult(index=index, shape=shape, flops=self.spec.flops_of(shape),
                             bytes=self.spec.bytes_of(shape))
        if "error" in raw or not raw.get("samples_ms"):
            self._timing_failure(index, raw.get("error", "no samples"))
            self.findings += [Finding.model_validate(f) for f in raw.get("integrity", [])]
            return result
        samples = raw["samples_ms"]
        result.median_ms, result.spread_ms, result.samples_ms = statistics.median(samples), iqr(samples), samples
        result.timing_method = raw["method"]
        if self.device == "cuda":  # on the CPU every sample is the host's: nothing to tell apart
            result.host_bound_samples = raw.get("host_bound_samples")
        score_shape(result, self.spec, self.profile)
        self._timing_guards(index, raw)
        self.bench_log.append(_shape_line(result, raw))
        return result

    def _timing_failure(self, index: int, error: str) -> None:
        first = error.splitlines()[0] if error else "unknown error"
        if "TimedOutputInvalid" in error:
            self.findings.append(verdict.finding("timed_output", 8, f"shape {index}: a timed call returned a "
                                                 "wrong output though the checked calls were right", first))
        self.grading.reasons.append(f"timing failed on shape {index}: {first}")
        self.bench_log.append(f"shape {index}: timing failed: {error}")

    def _timing_guards(self, index: int, raw: dict[str, Any]) -> None:
        if raw.get("memo_probe", "").startswith("failed"):
            self.findings.append(verdict.finding("memo_probe", 7, f"shape {index}: after its input was overwritten "
                                                 "in place the output did not change", raw["memo_probe"][:500]))
        for msg in raw.get("flags", []):
            self.findings.append(verdict.finding("flag_pinning", 14, f"during timing: backend flag {msg}"))
        late = raw.get("side_stream_samples", 0)
        if late > len(raw.get("samples_ms", [])) // 2:
            self.findings.append(verdict.finding(
                "side_streams", 9, f"shape {index}: work finished after the call's own end event in {late} samples; "
                "timed up to the device-wide synchronise instead", severity="warning"))
        for note in raw.get("notes", []):
            self.bench_log.append(f"shape {index}: {note}")
        if raw.get("blind_windows") and self.device == "cuda":
            self.findings.append(verdict.finding(
                "timed_windows", 11, f"shape {index}: {raw['blind_windows']} audited window(s) of timed calls recorded "
                "no kernel at all, not even the grader's own L2 flush: something in the process kept the kernel "
                "recorder from seeing the calls", f"recorder: {raw.get('audit_recorder')}", severity="warning"))
        if raw.get("audited_calls") is not None:
            self.bench_log.append(f"shape {index}: {raw['audited_calls']} timed calls audited by kernel name "
                                  f"(recorder: {raw.get('audit_recorder')}), left out of the samples")

    def run_counters(self) -> None:
        """One ncu pass over one timed call, in its own process under its own limit (never inside the timing):
        the call's kernels must read the bytes the problem must read (kernelbench.eval.integrity.counters)."""
        from kernelbench.eval.integrity import counters
        from kernelbench.eval.process import worker_env

        if not counters.applies(self.device):
            return
        if not self.counters:
            self._add_findings("counters", [counters.off_finding()])
            return
        started = time.monotonic()
        target = counters.ProbeTarget(self.pristine, self.module, self.workdir, self.device,
                                      self.job("counters", [])["model_seeds"],
                                      {**worker_env(self.device), **self.build_env})
        self._add_findings("counters", counters.counter_check(self.spec, target, self.timing_cases(),
                                                              self.limits["counters"]))
        self.clock("counters", started)

    def run_gates(self) -> None:
        if self.profile is None:
            return
        for shape in self.grading.shapes:
            message = faster_than_light(shape, self.spec, self.profile)
            if message:
                self.findings.append(verdict.finding("speed_of_light", 15, message,
                                                     f"{shape.median_ms:.4g} ms measured"))

    # ------------------------------------------------------------------------------------------- verdict

    def attach_baselines(self) -> None:
        from kernelbench.problems.baselines import baselines_path, load_baselines

        if self.profile is None:
            return
        path = baselines_path(self.problem_dir, self.profile.key)
        if not path.is_file() or self.mode != "full":
            return
        baselines = load_baselines(path)
        for name, line in baselines.lines.items():
            self.grading.baselines[name] = line.peak_fraction if line.available else None
            by_index = line.median_ms_by_shape()
            for shape in self.grading.shapes:
                if shape.index in by_index:
                    shape.baselines_ms[name] = by_index[shape.index]

    def decide(self, correct: bool) -> None:
        g = self.grading
        g.correct = correct
        g.peak_fraction = geometric_mean([s.fraction for s in g.shapes]) if g.shapes else None
        if self.profile is not None:
            g.ceiling = ceiling_of(self.spec, self.profile)
        if any(f.severity == "error" for f in self.findings):
            g.outcome = Outcome.INVALID
            errors = dict.fromkeys(f"class {f.klass} ({f.class_name}): {f.message}"  # once each, in order
                                   for f in self.findings if f.severity == "error")
            g.reasons.insert(0, "integrity: " + "; ".join(errors))
        elif not correct:
            g.outcome = Outcome.CHECK_FAILED
        elif not self.timed:
            g.outcome = Outcome.PASS
        elif self.fresh_unjudged or len(g.shapes) != len(self.shapes) or any(s.median_ms is None for s in g.shapes):
            g.outcome = Outcome.BENCHMARK_FAILED
        else:
            g.outcome = Outcome.PASS


PARTNER_GRACE_S = 5.0


def wait_either(handle: StageHandle, partner: StageHandle, limit_s: float) -> bool:
    """Wait until `handle` ends or its limit passes (False), or until `partner` ends first (True)."""
    while time.monotonic() - handle.started < limit_s:
        if handle.proc.poll() is not None:
            return False
        if partner.proc.poll() is not None:
            try:
                handle.proc.wait(timeout=PARTNER_GRACE_S)
                return False
            except subprocess.TimeoutExpired:
                return True
        time.sleep(0.05)
    return False


def needs_sass_check(spec: ProblemSpec) -> bool:
    try:
        from kernelbench.eval.integrity.hooks import needs_sass_check as needs
    except ImportError:
        return "fp8_tensor_cores" in spec.leak_checks
    return needs(spec)


def required_sass(spec: ProblemSpec, device_info: dict[str, Any]) -> list[str] | None:
    """problem.yaml's `required_sass` mnemonics for the arch the judge reported (sm_90 on an H100)."""
    from kernelbench.eval.integrity.hooks import required_mnemonics

    return required_mnemonics(spec, device_info.get("arch") or None)


def iqr(samples: list[float]) -> float:
    if len(samples) < 4:
        return max(samples) - min(samples)
    q = statistics.quantiles(samples, n=4)
    return q[2] - q[0]


def scratch_dir() -> str | None:
    """RAM-backed /dev/shm when it has room (gigabyte inputs and outputs move between stages), else the default."""
    try:
        usage = shutil.disk_usage("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if usage.free > SHM_MIN_FREE else None


def _build_env(root: Path) -> dict[str, str]:
    """Compile caches the grader owns, so the code of every kernel built while grading can be inspected."""
    try:
        from kernelbench.eval.integrity.sass import build_env
    except ImportError:
        return {}
    return build_env(root)


def _shape_line(result: ShapeResult, raw: dict[str, Any]) -> str:
    parts = [f"shape {result.index} {result.shape}: median {result.median_ms:.4g} ms, IQR {result.spread_ms:.3g} ms "
             f"over {len(result.samples_ms)} trials ({result.timing_method})"]
    if result.tflops is not None:
        parts.append(f"{result.tflops:.4g} TFLOP/s")
    if result.gbps is not None:
        parts.append(f"{result.gbps:.4g} GB/s")
    if result.fraction is not None:
        parts.append(f"{100 * result.fraction:.2f}% of ceiling")
    if raw.get("sync_overhead_ms"):
        parts.append(f"sync overhead {raw['sync_overhead_ms'] * 1e3:.1f} us")
    if result.host_bound_samples:
        parts.append(f"{result.host_bound_samples} of {len(result.samples_ms)} samples host-bound")
    parts.append(f"memo probe {raw.get('memo_probe')}")
    return ", ".join(parts)


def template_paths(solution: Path, problem_dir: Path) -> list[Path]:
    """Files a solution must not edit: the problem's own and the workspace copies beside the solution."""
    return [problem_dir / n for n in PROBLEM_FILES] + [solution.parent / n for n in WORKSPACE_TEMPLATES]


def _snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.is_file() else None for p in paths}


def template_findings(before: dict[Path, bytes | None], hashes: dict[str, str], problem_dir: Path) -> list[Finding]:
    """Compare template files with their state before grading. The source problem folder is only ever read
    (grading used copies taken before it started): a change there is reported, never written back. A changed
    workspace copy beside the solution is the candidate's doing: an error, and the copy is put back."""
    findings = []
    after = file_hashes(list(before))
    for path, content in before.items():
        if after[str(path)] == hashes[str(path)]:
            continue
        if path.parent == problem_dir:
            findings.append(verdict.finding("template_hashes", 12, f"the problem's {path.name} changed while it was "
                                            "graded (grading used the copy taken before; the folder was left as "
                                            "found)", str(path), severity="warning"))
            continue
        if content is not None:
            path.write_bytes(content)
        findings.append(verdict.finding("template_hashes", 12, f"{path.name} was modified during grading "
                                        "(restored)", str(path)))
    return findings


def grade_solution(solution: Path, problem_dir: Path, *, device: str = "cuda", shapes: str = "full",
                   out_dir: Path | None = None, line: str = "candidate", lint: bool = True,
                   limits: dict[str, float] | None = None, timing: bool = True,
                   counters: bool = True) -> GradeReport:
    """Grade one solution file against one problem; see the module docstring for the order of stages."""
    started = time.monotonic()
    solution, problem_dir = Path(solution).resolve(), Path(problem_dir).resolve()
    if not solution.is_file():
        report = GradeReport(grading=Grading(has_solution=False, outcome=Outcome.NO_SOLUTION, device=device,
                                             shapes_mode=shapes, reasons=[f"no solution file at {solution}"]))
        return _finish(report, out_dir)
    watched = template_paths(solution, problem_dir)
    before, hashes = _snapshot(watched), file_hashes(watched)
    with tempfile.TemporaryDirectory(prefix="kb-grade-", dir=scratch_dir()) as tmp:
        grader = Grader(solution, problem_dir, device, shapes, line, {**STAGE_LIMITS_S, **(limits or {})}, lint,
                        Path(tmp))
        grader.stages["setup"] = round(time.monotonic() - started, 3)
        grader.timed_next, grader.counters = timing or counters, counters
        if timing:
            grader.add_timed_stress()
        grader.run_lint()
        correct = grader.run_correctness()
        grader.check_pristine_copy()
        grader.run_launch_checks()
        if correct:
            grader.run_counters()
        if correct and timing:
            grader.run_timing()
            grader.run_gates()
            grader.attach_baselines()
        grader.findings += template_findings(before, hashes, problem_dir)
        grader.decide(correct)
    grader.grading.elapsed_s = time.monotonic() - started
    grader.stages["total"] = round(grader.grading.elapsed_s, 3)
    environment = collect_environment(device, grader.profile, problem_hash(problem_dir), grader.device_info)
    environment.isolation = grader.isolation.note
    report = GradeReport(grading=grader.grading, integrity=grader.findings, environment=environment,
                         check_log="\n".join(grader.check_log) + "\n",
                         benchmark_log="\n".join(grader.bench_log) + "\n", stages=grader.stages)
    report.check_log += "[stage seconds] " + ", ".join(f"{k} {v:.1f}" for k, v in grader.stages.items()) + "\n"
    return _finish(report, out_dir)


def _finish(report: GradeReport, out_dir: Path | None) -> GradeReport:
    if out_dir is not None:
        out_dir = Path(out_dir)
        atomic_write_text(out_dir / "check.log", report.check_log)
        atomic_write_text(out_dir / "benchmark.log", report.benchmark_log)
        atomic_write_text(out_dir / "grade.json", report.dump_json())
    return report
