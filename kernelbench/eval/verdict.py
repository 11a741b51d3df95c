"""From stage records to verdicts: what the candidate's stages recorded (their own processes) and what the judge
decided (a trusted process) become one SeedResult per case, integrity findings, and the grading's outcome.

Every function here is pure: protocol records in, findings or results out (the grader logs and collects them).
"""

from __future__ import annotations

import math
from functools import partial

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding, Grading, Outcome, SeedResult
from kernelbench.eval.cases import Case
from kernelbench.eval.failures import GuardFailed
from kernelbench.eval.protocol import (
    CandidateReport,
    CaseRecord,
    CaseVerdict,
    ErrorSize,
    KeptCall,
    RefusedCallReplay,
    RepeatDifference,
    ShapeTiming,
)

# error-size detector: candidate error vs the reference's own error, both against an fp64 oracle
ERROR_RATIO_WARN, ERROR_RATIO_FAIL, ERROR_MIN_ULPS = 8.0, 64.0, 4.0
# an rms error half the output's own size, far above the reference's, is no answer at all (zeros, the wrong
# tensor), not a lower precision: the case fails its check (an output smaller than the tolerance's atol
# everywhere passes the elementwise comparison whatever it holds)
WRONG_ANSWER_RMS = 0.5
# a wrong output on fresh inputs is compared with the answers to this many of its shape's first timed calls' inputs,
# and as many of the latest before it (worker.fresh.against_earlier_answers: a reference run each, on wrong outputs
# only)
EARLIER_CALLS = 4


class ReferenceFailed(Exception):
    """The problem's own reference could not run a case: a problem bug, not the candidate's."""


# ------------------------------------------------------------------------------------------------- checked cases

def judge_case(case: Case, record: CaseRecord | None, judged: CaseVerdict | None) -> tuple[SeedResult, list[Finding]]:
    seed_result = partial(SeedResult, shape_index=case.shape_index, seed=case.public_seed, case=case.label)
    if judged is not None and judged.reference_error is not None:
        raise ReferenceFailed(f"case {case.id}: {judged.reference_error}")
    if judged is not None and judged.guard_error is not None:
        raise GuardFailed("judge's", f"case {case.id}: {judged.guard_error}")
    problems, findings = guard_problems(case, record)
    if problems:
        return seed_result(passed=False, message="; ".join(problems)), findings
    if judged is None or judged.missing:
        return seed_result(passed=False, message="no output was saved for this case"), findings
    messages = list(judged.messages)
    repeat_messages = [repeat_message(d) for d in judged.repeat]
    if case.exact_repeat and repeat_messages:  # the problem asks for determinism: a difference is a failed check
        messages += [f"not deterministic: {m}" for m in repeat_messages]
    wrong = [size for size in judged.error_size if is_no_answer(size)]
    messages += [no_answer_message(size) for size in wrong]
    result = seed_result(passed=judged.passed and not wrong and not (case.exact_repeat and repeat_messages),
                         max_abs_err=_finite(judged.max_abs_err), max_rel_err=_finite(judged.max_rel_err),
                         worst_index=judged.worst_index, message="; ".join(messages))
    findings += judged.integrity
    findings += [finding("repeat_bitwise", 16, f"shape {case.shape_index}: {m}", f"case {case.id}",
                         severity="warning") for m in repeat_messages]
    for size in judged.error_size:
        if size not in wrong:
            findings += error_size_findings(case.id, size)
    return result, findings


def error_ratio(size: ErrorSize) -> float:
    """The candidate's error against the fp64 oracle over the reference's own (a floor below a float's rounding)."""
    return size.candidate / max(size.reference, size.eps / 64)


def is_no_answer(size: ErrorSize) -> bool:
    """An output whose error against the fp64 oracle is half its own size and far above the reference's."""
    return size.candidate >= WRONG_ANSWER_RMS and error_ratio(size) > ERROR_RATIO_FAIL


def no_answer_message(size: ErrorSize) -> str:
    return (f"output {size.output}: rms error {size.candidate:.3g} of the output's own size against an fp64 oracle "
            f"(the reference's {size.reference:.3g}): not the answer, though within the elementwise tolerance")


def repeat_message(d: RepeatDifference) -> str:
    """What a reader checks: the two calls, the output, how many elements differ and the largest difference."""
    where = f" at index {d.worst_index}" if d.worst_index is not None else ""
    gap = f", largest difference {d.max_abs_diff:.4g}{where}" if d.max_abs_diff is not None else where
    return (f"output {d.output} called again on the inputs of {d.of} differs bit for bit in {d.differing} of "
            f"{d.total} elements{gap} (float atomics reorder sums from run to run; a race or an out-of-bounds "
            f"read also shows this way)")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def guard_problems(case: Case, record: CaseRecord | None) -> tuple[list[str], list[Finding]]:
    if record is None:
        return ["the candidate's stage ended before this case ran"], []
    if record.error is not None:
        return [f"the candidate raised: {record.error.splitlines()[0]}"], []
    problems, findings = [], []
    if record.type_error is not None:
        problems.append(record.type_error)
        findings.append(finding("exact_type", 10, record.type_error, f"case {case.id}"))
    for msg in record.inputs:
        problems.append(msg)
        findings.append(finding("inputs_unchanged", 3, msg, f"case {case.id}"))
    for msg in record.flags:
        problems.append(f"backend flag {msg}")
        findings.append(finding("flag_pinning", 14, f"backend flag {msg}", f"case {case.id}"))
    return problems, findings


def error_size_findings(case_id: str, size: ErrorSize) -> list[Finding]:
    """A candidate whose error against fp64 is far larger than the reference's own computes in lower precision."""
    err_c, err_r, eps = size.candidate, size.reference, size.eps
    ratio = error_ratio(size)
    evidence = (f"case {case_id} output {size.output}: candidate rms error {err_c:.3g}, reference {err_r:.3g} "
                f"(ratio {ratio:.3g}) against an fp64 oracle")
    if err_c <= ERROR_MIN_ULPS * eps:
        return []  # a few units in the last place is rounding, whatever the ratio
    if ratio > ERROR_RATIO_FAIL:
        return [finding("error_size", 14, "error far above the reference's own: the candidate computes in lower "
                        "precision than the problem asks", evidence)]
    if ratio > ERROR_RATIO_WARN:
        return [finding("error_size", 14, "error well above the reference's own", evidence, severity="warning")]
    return []


# ------------------------------------------------------------------------------------------------- candidate stages

def candidate_stage_findings(stage: str, report: CandidateReport | None) -> list[Finding]:
    """What a candidate stage's own guards reported (kernelbench.eval.worker.arming), whatever its end."""
    if report is None:
        return []
    return namespace_findings(stage, report.namespace_changes) + introspection_findings(stage, report.introspection)


def introspection_findings(stage: str, refused: list[str]) -> list[Finding]:
    """The stage's audit hook refused the solution's reach for frames or live objects
    (kernelbench.eval.integrity.introspection)."""
    if not refused:
        return []
    return [finding("introspection", 8, f"{stage} stage: solution code reached for the interpreter's stack frames or "
                    f"live objects at run time ({len(refused)} attempt(s), refused)", "; ".join(refused[:4])[:2000])]


def namespace_findings(stage: str, changes: list[str]) -> list[Finding]:
    """The stage's watch over the grader's own code and the library functions it calls saw them changed while the
    candidate was loaded (kernelbench.eval.integrity.namespaces)."""
    if not changes:
        return []
    shown = "; ".join(changes[:6]) + (f"; and {len(changes) - 6} more" if len(changes) > 6 else "")
    return [finding("namespace_watch", 11, f"{stage} stage: code the grader runs beside the candidate was changed at "
                    f"run time ({len(changes)} name(s) replaced, deleted or rewritten in place)", shown[:2000])]


def signature_findings(error: str) -> list[Finding]:
    """A stage reply that failed its signature check was written by something other than the stage's worker."""
    return [finding("trusted_channel", 11, error)] if "signature" in error else []


def republished_findings(case_ids: list[str]) -> list[Finding]:
    if not case_ids:
        return []
    return [finding("grading_files", 12, "the candidate deleted the inputs the judge had published for it; the judge "
                    "published them again", f"cases {', '.join(sorted(set(case_ids)))}")]


def edited_copy_findings(changed: list[str]) -> list[Finding]:
    if not changed:
        return []
    return [finding("grading_files", 12, "the grader's copy of the problem files was deleted or edited during "
                    "grading", ", ".join(changed))]


def rewritten_solution_findings(name: str) -> list[Finding]:
    return [finding("grading_files", 12, "the grader's copy of the solution was rewritten during grading: a later "
                    "stage would have imported code the lint never read (the copy was put back)", name)]


def rewritten_output_findings(changed: dict[str, tuple[str, str]]) -> list[Finding]:
    """Checked outputs whose files no longer hold what the judge compared: only the check stage (the candidate's
    process) could write there, and the counter pass and the timed stages read them again as the right answers."""
    if not changed:
        return []
    case_id, (judged, now) = next(iter(changed.items()))
    return [finding("grading_files", 12, f"{len(changed)} checked output(s) were rewritten after the judge compared "
                    "them: a later stage would have taken the new bytes for the answer the checks passed",
                    f"out_{case_id}.kbt: sha256 {judged} when judged, {now or 'no file'} after the check stage")]


def missing_files_findings(missing: list[str]) -> list[Finding]:
    return [finding("grading_files", 12, "files the bench stage needs were deleted during the check stage; nothing "
                    "could be timed", missing[0])]


# ------------------------------------------------------------------------------------------------- timed calls

def first_line(error: str) -> str:
    return error.splitlines()[0] if error else "unknown error"


def timing_failure_findings(index: int, error: str, replay: RefusedCallReplay | None) -> list[Finding]:
    """A shape that could not be timed because a timed call returned a wrong output. The refused call made again
    outside the loop decides what it was. Memoisation (class 7, INVALID) needs an answer kept across calls: a wrong
    output that is bit for bit another input's answer. Every other wrong output fails the checks
    (`timed_output_wrong`), with a lead where the replay points somewhere: an output that follows the tensors'
    identity rather than their values (state such as a launch plan or a padded copy keyed on the pointer, stale
    after an in-place write that moved the version counter), or one that no call outside the loop reproduces (a
    race, or behaviour that depends on being timed). A refused call alone proves no intent."""
    if "TimedOutputInvalid" not in error or replay is None:
        return []
    evidence = f"{first_line(error)[:600]}; called again: {replay_summary(replay)}"
    if replay.answer_of:
        return [finding("timed_output", 7, f"shape {index}: a timed call returned, bit for bit, the answer of another "
                        f"input ({', '.join(replay.answer_of[:3])}): an answer kept across calls", evidence)]
    if replay.follows_identity:
        return [finding("timed_output", 7, f"shape {index}: a timed call's output follows its input tensors' "
                        "identity, not their values: the refused values, written back in place into the very "
                        "tensors the call was given (pointer kept, version counter moved), give a wrong output "
                        "again, and in new tensors the right one; not another input's answer, so state keyed on the "
                        "pointer (a wrong output), not a kept answer", evidence, severity="warning")]
    if replay.reproduced:
        return []
    return [finding("timed_output", 8, f"shape {index}: a timed call returned a wrong output that no call outside "
                    "the timed loop reproduced (a race, or behaviour that depends on being timed)", evidence,
                    severity="warning")]


def replay_summary(replay: RefusedCallReplay) -> str:
    def verdict(problems: list[str] | None) -> str:
        if problems is None:
            return "not built"
        return f"wrong ({problems[0][:300]})" if problems else "right"

    kept = f"; a wrong output here is bit for bit the answer of {', '.join(replay.answer_of[:3])}" \
        if replay.answer_of else ""
    return (f"input set {replay.set_index} ({replay.case}): in the same tensors {verdict(replay.same_tensors)}; "
            f"in new tensors {verdict(replay.new_tensors)}; on a model built afresh {verdict(replay.new_model)}"
            f"{kept}")


def timed_output_wrong(timing: ShapeTiming) -> bool:
    """A timed call that gave a wrong output rather than a kept answer (a refused call, or the in-place probe's call
    wrong in some other way than its earlier answer): the grading fails its checks."""
    if timing.memo_probe.startswith("failed"):
        return True
    replay = timing.refused_replay
    return timing.error is not None and "TimedOutputInvalid" in timing.error and (
        replay is None or not replay.memoised)


def timing_guard_findings(index: int, timing: ShapeTiming, device: str) -> list[Finding]:
    """What the bench stage's guards saw on a timed shape: the in-place memo probe, backend flags, side streams,
    blind audit windows."""
    found = []
    if timing.memo_probe.startswith("stale"):
        found.append(finding("memo_probe", 7, f"shape {index}: after its input was overwritten in place the output "
                             "was, bit for bit, its answer to the values before: an answer kept under the tensors' "
                             "identity", timing.memo_probe[:500]))
    elif timing.memo_probe.startswith("failed"):
        found.append(finding("memo_probe", 7, f"shape {index}: after its input was overwritten in place (version "
                             "counter moved) the output was wrong, though not its earlier answer: state keyed on the "
                             "tensors' identity, a wrong output rather than a kept answer", timing.memo_probe[:500],
                             severity="warning"))
    found += [finding("flag_pinning", 14, f"during timing: backend flag {msg}") for msg in timing.flags]
    if timing.side_stream_samples > len(timing.samples_ms) // 2:
        found.append(finding("side_streams", 9, f"shape {index}: work finished after the call's own end event in "
                             f"{timing.side_stream_samples} samples; timed up to the device-wide synchronise instead",
                             severity="warning"))
    if timing.persisting_l2_reset is False and device == "cuda":
        found.append(finding("l2_reset", 13, f"shape {index}: persisting L2 lines could not be reset before the timed "
                             "calls (neither cuda-python nor a CUDA runtime library was found): the L2 flush alone "
                             "stood against an access-policy window", severity="info"))
    if timing.blind_windows and device == "cuda":
        found.append(finding("timed_windows", 11, f"shape {index}: {timing.blind_windows} audited window(s) of timed "
                             "calls recorded no kernel at all, not even the grader's own L2 flush: something in the "
                             "process kept the kernel recorder from seeing the calls",
                             f"recorder: {timing.audit_recorder}", severity="warning"))
    return found


def refused_kept_findings(records: list[KeptCall]) -> list[Finding]:
    return [finding("fresh_inputs", 10, f"a timed call on fresh inputs (call {r.call} of {r.of}) returned an "
                    "output the grader refuses", r.type_error[:500]) for r in records if r.type_error is not None]


def fresh_verdict_findings(case: Case, record: KeptCall, judged: CaseVerdict) -> list[Finding]:
    """A kept timed call judged on the fresh inputs it was given: the answer to the inputs they were permuted from
    (memoisation, class 7), otherwise wrong (a wrong output, which fails the checks; on that alone no intent is
    shown), or computed in lower precision (the error-size evidence)."""
    where = f"shape {case.shape_index}, timed call {record.call} of {record.of}"
    found = list(judged.integrity)
    for size in judged.error_size:
        found += [f for f in error_size_findings(f"{case.id} ({where})", size) if f.severity == "error"]
    if not judged.passed and judged.matches_earlier_answer:
        messages = judged.messages or ["no output could be compared"]
        found.append(finding("fresh_inputs", 7, f"{where}: on fresh inputs (its base set permuted, drawn just before "
                             "the call) the output was the answer to inputs an earlier call saw: an answer kept "
                             "under a key the permutation leaves unchanged",
                             f"against the fresh inputs' answer: {messages[0][:300]}; {judged.earlier_answer}"))
    elif not judged.passed:  # the grading fails its checks (timing.judge_fresh_calls); the finding is a lead
        messages = judged.messages or ["no output could be compared"]
        found.append(finding("fresh_inputs", 8, f"{where}: on fresh inputs (drawn just before the call, unseen by any "
                             "earlier call) the output was wrong though the checked calls were right: a wrong "
                             "output, and a lead (a kernel right only on inputs it has seen, or only when not "
                             "timed; a race or a bug on these values gives the same)", messages[0][:500],
                             severity="warning"))
    return found


# ------------------------------------------------------------------------------------------------- the external clock

def paced_timing_findings(index: int, published_ms: float | None, samples: int, paced,
                          overhead_ms: float | None) -> list[Finding]:
    """A shape's published median against what the grader's own clock saw of its calls (eval.pacing.PacedShape,
    None: no call of the shape was paced although the grader asked for it) and the overhead the trusted fresh
    stage measured around such calls (None: not measured, then only the count of calls is weighed)."""
    return (paced_count_findings(index, published_ms, samples, paced)
            or paced_floor_findings(index, published_ms, paced, overhead_ms))


def paced_count_findings(index: int, published_ms: float | None, samples: int, paced) -> list[Finding]:
    """More timed calls reported than the grader's pacer saw happen: no load on the machine explains that."""
    if published_ms is None:
        return []
    spans = paced.spans_ms() if paced else []
    if len(spans) < samples:
        return [finding("external_clock", 11, f"shape {index}: the bench stage reported {samples} timed calls, "
                        f"but the grader's pacer saw {len(spans)} calls on fresh inputs: timings the grader never "
                        "saw happen", f"published median {published_ms:.4f} ms")]
    return []


def paced_floor_findings(index: int, published_ms: float | None, paced, overhead_ms: float | None,
                         *, again: bool = False) -> list[Finding]:
    """A published median below the floor the grader's clock leaves for the calls (eval.pacing). A machine loaded
    by something else while the bench stage ran lengthens every span, so this finding alone is a suspicion the
    grader settles by timing the shape again (kernelbench.eval.stages.timing.time_again); `again`: the second
    timing's finding."""
    from kernelbench.eval.pacing import EXTERNAL_FRACTION, EXTERNAL_SLACK_MS, OVERHEAD_FACTOR, SPAN_RATIO

    if published_ms is None or overhead_ms is None or not paced or not paced.spans_ms():
        return []
    spans = paced.spans_ms()
    external = spans[0]  # the shortest: contention on the machine only ever lengthens a span
    floor = min(EXTERNAL_FRACTION * (external - OVERHEAD_FACTOR * overhead_ms) - EXTERNAL_SLACK_MS,
                external / SPAN_RATIO)
    if published_ms >= floor:
        return []
    when = "timed again, " if again else ""
    return [finding("external_clock", 11, f"shape {index}: {when}the published median {published_ms:.4f} ms is below "
                    f"what the grader's own clock allows ({floor:.4f} ms): the timing report was not the calls' own",
                    f"grader's clock: the shortest of {len(spans)} calls on fresh inputs took {external:.4f} ms from "
                    f"nonce sent to fingerprint received (median {spans[len(spans) // 2]:.4f} ms); the same steps "
                    f"without a call, in the trusted fresh stage: {overhead_ms:.4f} ms; floor = the lesser of "
                    f"shortest / {SPAN_RATIO:g} and {EXTERNAL_FRACTION:g} x (shortest - "
                    f"{OVERHEAD_FACTOR:g} x overhead) - {EXTERNAL_SLACK_MS:g} ms; the bench stage's own median "
                    f"{published_ms:.4f} ms")]


def clock_settled_findings(index: int, first: list[Finding], published_ms: float) -> list[Finding]:
    """The first timing of a shape fell below the grader's clock and the second did not: shown, not convicted
    (the machine's load, or a candidate that lied once; either way the second timing is the one published)."""
    evidence = "; ".join(f"{f.message} ({f.evidence})" for f in first)[:2000]
    return [finding("external_clock", 11, f"shape {index}: the first timing fell below the grader's clock; timed "
                    f"again it did not (median {published_ms:.4f} ms), and the second timing is the one published",
                    evidence, severity="warning")]


def paced_kept_findings(index: int, claimed: list[KeptCall], paced) -> tuple[list[KeptCall], list[Finding]]:
    """The kept calls the bench stage reported for a shape against the grader's own choice: the grader's records
    of its calls (number, nonce, weight, committed fingerprint) replace the stage's claims, and any disagreement
    is a finding. Returns the records the fresh stage is sent."""
    chosen = {c.number: c for c in (paced.kept if paced else [])}
    claimed_by_call = {r.call: r for r in claimed}
    found, records = [], []
    if set(chosen) != set(claimed_by_call):
        found.append(finding("external_clock", 11, f"shape {index}: the calls the bench stage kept for judging are not "
                             "the ones the grader chose", f"grader chose calls {sorted(chosen)}; the bench stage kept "
                             f"{sorted(claimed_by_call)}"))
    for number, call in sorted(chosen.items()):
        record = claimed_by_call.get(number)
        if record is None:
            continue
        if record.seed != call.nonce:
            found.append(finding("external_clock", 11, f"shape {index}: kept call {number} was not made on the inputs the "
                                 "grader drew for it", f"grader's nonce {call.nonce}, the bench stage's seed {record.seed}"))
            continue
        records.append(record.model_copy(update={"weight": call.weight, "fingerprint": call.fingerprint,
                                                 "earlier": earlier_calls(paced.calls, number)}))
    return records, found


def earlier_calls(calls: list, number: int) -> list[tuple[int, int]]:
    """(number, seed) of the calls before call `number` whose answers a wrong kept output is compared with: the
    first EARLIER_CALLS (an answer kept at a key's first call: the first calls of a shape meet each base set) and the
    latest EARLIER_CALLS (an answer kept and refreshed now and then), from the grader's own record."""
    before = [c for c in calls if c.number < number]
    chosen = before[:EARLIER_CALLS] + before[max(EARLIER_CALLS, len(before) - EARLIER_CALLS):]
    return [(c.number, c.nonce) for c in chosen]


def commitment_findings(record: KeptCall, judged: CaseVerdict) -> list[Finding]:
    """The kept output the fresh stage judged must be the output the call committed to when it returned."""
    if record.fingerprint is None or judged.fingerprint is None or judged.fingerprint == record.fingerprint:
        return []
    return [finding("external_clock", 11, f"timed call {record.call}: the output kept for judging is not the output "
                    "the call committed to when it returned", f"committed fingerprint {record.fingerprint}, kept "
                    f"output's {judged.fingerprint} (weight {record.weight})")]


# ------------------------------------------------------------------------------------------------- the outcome

def decide(grading: Grading, findings: list[Finding], *, correct: bool, timed: bool, shapes_expected: int,
           unjudged: str) -> None:
    """The grading's outcome: integrity errors first (INVALID), then correctness, then whether every shape has a
    published median (a grading that timed nothing it could vouch for is a benchmark failure)."""
    grading.correct = correct
    if any(f.severity == "error" for f in findings):
        grading.outcome = Outcome.INVALID
        errors = dict.fromkeys(f"class {f.klass} ({f.class_name}): {f.message}"  # once each, in order
                               for f in findings if f.severity == "error")
        grading.reasons.insert(0, "integrity: " + "; ".join(errors))
    elif not correct:
        grading.outcome = Outcome.CHECK_FAILED
    elif not timed:
        grading.outcome = Outcome.PASS
    elif unjudged or len(grading.shapes) != shapes_expected or any(s.median_ms is None for s in grading.shapes):
        grading.outcome = Outcome.BENCHMARK_FAILED
    else:
        grading.outcome = Outcome.PASS
