"""The hostile-input catalogue: every known way one input file (or one flag) could break the site build.

Each case corrupts a synthetic data folder (`synthetic.write_deck`) the way a careless or hostile agent, auditor
or importer could, and says what the build must do about it: build the rest of the site and report the file
(`expect`: text the report must hold), or refuse to start (`refused`: an --out that overlaps the data). Cases
that plant a secret outside the data folder say which text must never reach the site. The regression tests
(tests/site/test_hostile_inputs.py) and the benchmark that records each case's exit code, traceback, time and
peak memory (benchmarks/hostile_inputs.py) both read this list, so a new case is tested and measured at once.

Nothing here is a measurement; the data is made up and lives in a temporary folder.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SECRET = "TOP-SECRET-OUTSIDE-THE-DATA-FOLDER"
DECK_RUNS = 6  # runs of the synthetic deck the cases start from (runs 0 and 4 are annotated)


@dataclass(frozen=True)
class Case:
    """One corruption. `corrupt(data, scratch)` edits the data folder (`scratch` is a folder beside it for
    things that must lie outside) and returns the build's extra arguments (an --out, say), or []."""

    name: str
    group: str  # data-loss | crash | silent | resources | outside | special-files | schema
    what: str
    corrupt: Callable[[Path, Path], list[str]]
    expect: str = ""  # text a reported location (file, or file:line) must hold: usually the bad file's path
    line: bool = False  # that report must also give the line
    refused: bool = False  # the build must refuse to start (exit 2) and touch nothing
    secret: str | None = None  # text that must never appear in the built site
    heavy: bool = False  # before the fix it took gigabytes or hung: tests run it in a bounded subprocess
    during: Callable[[Path, Path], None] | None = None  # done to the data while the build runs (`mid_build`)
    check: Callable[[Path], None] | None = None  # given the built site, raises AssertionError if the attack worked


CASES: list[Case] = []


def case(name: str, group: str, what: str, **kw) -> Callable:
    def register(corrupt: Callable[[Path, Path], list[str]]) -> Callable:
        CASES.append(Case(name, group, what, corrupt, **kw))
        return corrupt

    return register


# ------------------------------------------------------------------------------------------------ helpers


def runs_of(data: Path) -> list[Path]:
    return sorted(p for p in (data / "runs").iterdir() if p.is_dir())


def target_run(data: Path) -> Path:
    """The deck's first run: a PASS with a solution, a transcript and an annotation quoting solution.py."""
    return runs_of(data)[0]


def target_annotation(data: Path) -> Path:
    return data / "annotations" / f"{target_run(data).name}.yaml"


def target_writeup(data: Path) -> Path:
    return next((data / "annotations" / "writeups").glob("*.md"))


def edit_result(data: Path, edit: Callable[[dict], None]) -> None:
    """Edit the target run's result.json as parsed JSON; written with Python's json, which also writes the
    non-JSON NaN/Infinity literals and integers of any size (as a careless writer would)."""
    path = target_run(data) / "result.json"
    loaded = json.loads(path.read_text())
    edit(loaded)
    path.write_text(json.dumps(loaded, indent=2))


def set_result(keys: str, value) -> Callable[[Path, Path], list[str]]:
    """A corruption setting one field of the target result (dotted keys, list indices as numbers)."""

    def corrupt(data: Path, scratch: Path) -> list[str]:
        def edit(loaded: dict) -> None:
            node = loaded
            parts = keys.split(".")
            for part in parts[:-1]:
                node = node[int(part)] if isinstance(node, list) else node[part]
            node[parts[-1]] = value

        edit_result(data, edit)
        return []

    return corrupt


def replace_in_file(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise ValueError(f"{path}: {old!r} not found")
    path.write_text(text.replace(old, new, 1))


def transcript_lines(data: Path) -> tuple[Path, list[dict]]:
    path = target_run(data) / "transcript.jsonl"
    return path, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def edit_end_record(edit: Callable[[dict], None]) -> Callable[[Path, Path], list[str]]:
    def corrupt(data: Path, scratch: Path) -> list[str]:
        path, records = transcript_lines(data)
        edit(records[-1])
        write_lines(path, records)
        return []

    return corrupt


def annotation_with(data: Path, **fields) -> Path:
    path = target_annotation(data)
    loaded = yaml.safe_load(path.read_text())
    loaded.update(fields)
    path.write_text(yaml.safe_dump(loaded, sort_keys=False))
    return path


def laughs(levels: int, width: int) -> str:
    """A 'billion laughs' YAML value: `width ** levels` strings from a file of a few hundred bytes."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def link_outside(target: Path, link: Path) -> None:
    if link.is_dir() and not link.is_symlink():
        raise ValueError(f"{link} is a folder")
    link.unlink(missing_ok=True)
    os.symlink(target, link)


def make_socket(path: Path) -> None:
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    try:
        os.chdir(path.parent)  # a socket's address holds at most 108 bytes: bind by its bare name
        server.bind(path.name)
    finally:
        os.chdir(here)
        server.close()  # the socket file stays


def make_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def rel(data: Path, path: Path) -> str:
    return str(path.relative_to(data))


# ------------------------------------------------------------------------------------------------ --out


def _out(where: Callable[[Path, Path], Path]) -> Callable[[Path, Path], list[str]]:
    def corrupt(data: Path, scratch: Path) -> list[str]:
        out = where(data, scratch)
        return ["--out", str(out)]

    return corrupt


case("out-is-data", "data-loss", "--out is the data folder (each run folder was left holding only index.html)",
     refused=True)(_out(lambda d, s: d))
case("out-contains-data", "data-loss", "--out is the data folder's parent (leaderboard.json written into it)",
     refused=True)(_out(lambda d, s: d.parent))
case("out-inside-data", "data-loss", "--out is a new folder inside the data folder", refused=True)(
    _out(lambda d, s: d / "site"))
case("out-inside-runs", "data-loss", "--out inside runs/", refused=True)(_out(lambda d, s: d / "runs" / "site"))
case("out-is-annotations", "data-loss", "--out is annotations/", refused=True)(
    _out(lambda d, s: d / "annotations"))
case("out-inside-problems", "data-loss", "--out inside problems/", refused=True)(
    _out(lambda d, s: d / "problems" / "01_fp8_gemm"))


@case("out-link-to-data", "data-loss", "--out is a symlink to the data folder", refused=True)
def _out_link(data: Path, scratch: Path) -> list[str]:
    link = scratch / "site-link"
    os.symlink(data, link)
    return ["--out", str(link)]


@case("out-is-problems-option", "data-loss", "--out is the folder given with --problems", refused=True)
def _out_problems(data: Path, scratch: Path) -> list[str]:
    return ["--problems", str(data / "problems"), "--out", str(data / "problems")]


# ------------------------------------------------------------------------------------------------ one bad record


@case("transcript-usage-string", "crash", 'a transcript usage record {"type":"usage","output":"many"}',
      expect="transcript.jsonl")
def _usage_string(data: Path, scratch: Path) -> list[str]:
    path, records = transcript_lines(data)
    records.insert(3, {"type": "usage", "output": "many"})
    write_lines(path, records)
    return []


case("transcript-end-tokens-string", "crash", 'the end record\'s tokens {"input": "abc"}',
     expect="transcript.jsonl")(edit_end_record(lambda r: r.update(tokens={"input": "abc"})))
case("transcript-end-cost-string", "crash", 'the end record\'s cost_usd "free"', expect="transcript.jsonl")(
    edit_end_record(lambda r: r.update(cost_usd="free")))
case("transcript-end-duration-string", "crash", 'the end record\'s duration_s "long"',
     expect="transcript.jsonl")(edit_end_record(lambda r: r.update(duration_s="long")))
case("transcript-usage-negative", "silent", "a transcript usage record with negative tokens",
     expect="transcript.jsonl")(edit_end_record(lambda r: r.update(tokens={"input": -5, "output": -1})))


@case("transcript-ts-1e308", "crash", "event timestamps of +1e308 and -1e308 (the viewer's duration became NaN)",
      expect="transcript.jsonl")
def _huge_ts(data: Path, scratch: Path) -> list[str]:
    path, records = transcript_lines(data)
    events = [r for r in records if r.get("type") == "event"]
    events[0]["ts"], events[-1]["ts"] = -1e308, 1e308
    records[0]["ts"] = -1e308
    write_lines(path, records)
    return []


case("result-version-string", "crash", 'result.json "version": "x"', expect="result.json")(
    set_result("version", "x"))
case("result-trial-bigint", "crash", "result.json trial beyond 64 bits", expect="result.json")(
    set_result("trial", 10**30))
case("result-exit-code-bigint", "crash", "session.exit_code beyond 64 bits", expect="result.json")(
    set_result("session.exit_code", -(10**25)))
case("result-shape-bigint", "crash", "a shape's dimension beyond 64 bits", expect="result.json")(
    set_result("grading.shapes.0.shape.M", 10**40))


@case("result-deep-nesting", "crash", "a 100k-deep nested array in result.json", expect="result.json")
def _deep_json(data: Path, scratch: Path) -> list[str]:
    deep = "[" * 100_000 + "]" * 100_000
    replace_in_file(target_run(data) / "result.json", '"reasons": []', f'"reasons": {deep}')
    return []


case("result-elapsed-nan", "crash", "session.elapsed_s NaN", expect="result.json")(
    set_result("session.elapsed_s", float("nan")))
case("result-elapsed-inf", "crash", "session.elapsed_s Infinity", expect="result.json")(
    set_result("session.elapsed_s", float("inf")))
case("result-budget-nan", "crash", "session.budget_s NaN", expect="result.json")(
    set_result("session.budget_s", float("nan")))
case("result-budget-inf", "crash", "session.budget_s Infinity", expect="result.json")(
    set_result("session.budget_s", float("inf")))
case("result-median-inf", "crash", "a shape's median_ms Infinity", expect="result.json")(
    set_result("grading.shapes.0.median_ms", float("inf")))
# a valid number, if an absurd one: nothing to report, but no speed-up derived from it may become infinite
case("result-median-tiny", "silent", "a shape's median_ms of 1e-320 (a speed-up over it overflows)")(
    set_result("grading.shapes.0.median_ms", 1e-320))


@case("annotation-line-30-digits", "crash", "an annotation quote line number of 30 digits",
      expect="annotations/")
def _line_digits(data: Path, scratch: Path) -> list[str]:
    replace_in_file(target_annotation(data), "  - 8\n", "  - 123456789012345678901234567890\n")
    return []


@case("annotation-yaml-deep", "crash", "an annotation YAML nested 50k deep", expect="annotations/")
def _deep_yaml(data: Path, scratch: Path) -> list[str]:
    path = target_annotation(data)
    path.write_text(path.read_text() + "auditor: " + "[" * 50_000 + "]" * 50_000 + "\n")
    return []


@case("annotation-yaml-deep-block", "crash", "an annotation YAML of 1000 nested block mappings",
      expect="annotations/")
def _deep_block_yaml(data: Path, scratch: Path) -> list[str]:
    path = target_annotation(data)
    deep = "".join(f"{' ' * i}k{i}:\n" for i in range(1_000))
    path.write_text(path.read_text() + "auditor:\n" + " " + deep.replace("\n", "\n ").rstrip() + " x\n")
    return []


@case("writeup-lone-surrogate", "crash", 'a writeup title holding YAML\'s "\\ud800" escape (no UTF-8 can hold it)',
      expect="writeups/")
def _surrogate(data: Path, scratch: Path) -> list[str]:
    replace_in_file(target_writeup(data), "title: How the fp8 GEMM leak works", 'title: "leak \\ud800 works"')
    return []


@case("solution-self-link", "crash", "solution.py symlinked to itself", expect="solution.py")
def _self_link(data: Path, scratch: Path) -> list[str]:
    path = target_run(data) / "solution.py"
    path.unlink()
    os.symlink("solution.py", path)
    return []


# ------------------------------------------------------------------------------------------------ special files


@case("checklog-fifo", "special-files", "check.log is a FIFO (the build waited forever)", expect="check.log",
      heavy=True)
def _fifo_log(data: Path, scratch: Path) -> list[str]:
    make_fifo(target_run(data) / "check.log")
    return []


@case("transcript-fifo", "special-files", "the transcript is a FIFO", expect="transcript.jsonl", heavy=True)
def _fifo_transcript(data: Path, scratch: Path) -> list[str]:
    make_fifo(target_run(data) / "transcript.jsonl")
    return []


@case("result-fifo", "special-files", "result.json is a FIFO", expect="result.json", heavy=True)
def _fifo_result(data: Path, scratch: Path) -> list[str]:
    make_fifo(target_run(data) / "result.json")
    return []


@case("annotation-fifo", "special-files", "an annotation is a FIFO", expect="annotations/", heavy=True)
def _fifo_annotation(data: Path, scratch: Path) -> list[str]:
    make_fifo(data / "annotations" / "zz_pipe.yaml")
    return []


@case("writeup-fifo", "special-files", "a writeup is a FIFO", expect="writeups/", heavy=True)
def _fifo_writeup(data: Path, scratch: Path) -> list[str]:
    make_fifo(data / "annotations" / "writeups" / "pipe.md")
    return []


@case("solution-socket", "special-files", "solution.py is a Unix socket", expect="solution.py")
def _socket_solution(data: Path, scratch: Path) -> list[str]:
    make_socket(target_run(data) / "solution.py")
    return []


@case("result-is-folder", "special-files", "result.json is a folder", expect="result.json")
def _result_folder(data: Path, scratch: Path) -> list[str]:
    path = target_run(data) / "result.json"
    path.unlink()
    path.mkdir()
    return []


# ------------------------------------------------------------------------------------------------ accepted silently


case("peak-nan", "silent", "peak_fraction NaN", expect="result.json")(
    set_result("grading.peak_fraction", float("nan")))
case("peak-inf", "silent", "peak_fraction Infinity", expect="result.json")(
    set_result("grading.peak_fraction", float("inf")))
case("peak-1e308", "silent", "peak_fraction 1e308", expect="result.json")(set_result("grading.peak_fraction", 1e308))
case("peak-negative", "silent", "peak_fraction -0.5", expect="result.json")(
    set_result("grading.peak_fraction", -0.5))
case("peak-true", "silent", "peak_fraction true", expect="result.json")(set_result("grading.peak_fraction", True))
case("peak-string", "silent", 'peak_fraction "0.5" (a number written as a string)', expect="result.json")(
    set_result("grading.peak_fraction", "0.5"))
case("tokens-negative", "silent", "negative token counts", expect="result.json")(
    set_result("session.tokens.input", -1000))
case("budget-negative", "silent", "a negative budget", expect="result.json")(set_result("session.budget_s", -60))
case("cost-negative", "silent", "a negative cost", expect="result.json")(set_result("session.cost_usd", -3.5))
case("trial-zero", "silent", "trial 0 (trials count from 1)", expect="result.json")(set_result("trial", 0))
case("fraction-nan", "silent", "a shape's fraction NaN", expect="result.json")(
    set_result("grading.shapes.0.fraction", float("nan")))
case("baseline-nan", "silent", "a baselines file with a NaN peak_fraction", expect="baselines/h100_sxm.json")(
    lambda d, s: _edit_json(d / "problems" / "01_fp8_gemm" / "baselines" / "h100_sxm.json",
                            lambda b: b["lines"]["sota"].update(peak_fraction=float("nan"))))


def _edit_json(path: Path, edit: Callable[[dict], None]) -> list[str]:
    loaded = json.loads(path.read_text())
    edit(loaded)
    path.write_text(json.dumps(loaded, indent=2))
    return []


# ------------------------------------------------------------------------------------------------ resources


@case("yaml-laughs-9x9", "resources", "a 'billion laughs' annotation, 9 levels of 9 aliases (100 s, 10 GB)",
      expect="annotations/", heavy=True)
def _laughs9(data: Path, scratch: Path) -> list[str]:
    path = target_annotation(data)
    path.write_text(path.read_text() + laughs(9, 9))
    return []


@case("yaml-laughs-10x10", "resources", "a 'billion laughs' annotation, 10 levels of 10 aliases (killed at 24 GB)",
      expect="annotations/", heavy=True)
def _laughs10(data: Path, scratch: Path) -> list[str]:
    path = target_annotation(data)
    path.write_text(path.read_text() + laughs(10, 10))
    return []


@case("problem-yaml-laughs", "resources", "a 'billion laughs' in a problem.yaml", expect="problem.yaml",
      heavy=True)
def _laughs_problem(data: Path, scratch: Path) -> list[str]:
    path = data / "problems" / "01_fp8_gemm" / "problem.yaml"
    path.write_text(path.read_text() + laughs(9, 9))
    return []


@case("writeup-laughs", "resources", "a 'billion laughs' in a writeup's front matter", expect="writeups/",
      heavy=True)
def _laughs_writeup(data: Path, scratch: Path) -> list[str]:
    path = target_writeup(data)
    replace_in_file(path, "---\n", "---\n" + laughs(9, 9))
    return []


@case("quote-lines-1e8", "resources", "a quote of lines [1, 100000000] (45 s, 15 GB before its error)",
      expect="annotations/", heavy=True)
def _quote_range(data: Path, scratch: Path) -> list[str]:
    replace_in_file(target_annotation(data), "  - 7\n  - 8\n", "  - 1\n  - 100000000\n")
    return []


@case("result-oversized", "resources", "a result.json of 64 MiB", expect="result.json", heavy=True)
def _big_result(data: Path, scratch: Path) -> list[str]:
    def edit(loaded: dict) -> None:
        loaded["session"]["notes"] = ["x" * 1024] * (64 * 1024)

    edit_result(data, edit)
    return []


@case("result-million-errors", "resources", "a result.json (under its cap) of 200,000 values of the wrong kind",
      expect="result.json", heavy=True)
def _many_errors(data: Path, scratch: Path) -> list[str]:
    def edit(loaded: dict) -> None:
        loaded["grading"]["shapes"][0]["samples_ms"] = ["x"] * 200_000

    edit_result(data, edit)
    return []


@case("annotation-oversized", "resources", "an annotation of 32 MiB", expect="annotations/", heavy=True)
def _big_annotation(data: Path, scratch: Path) -> list[str]:
    path = target_annotation(data)
    path.write_text(path.read_text() + "auditor: " + "a" * (32 << 20) + "\n")
    return []


@case("writeup-oversized", "resources", "a writeup of 32 MiB", expect="writeups/", heavy=True)
def _big_writeup(data: Path, scratch: Path) -> list[str]:
    path = target_writeup(data)
    path.write_text(path.read_text() + ("word " * 15 + "\n") * (400_000))
    return []


@case("writeup-nesting", "resources", "a writeup of 100k nested block quotes and list items",
      expect="", heavy=True)
def _nested_writeup(data: Path, scratch: Path) -> list[str]:
    path = target_writeup(data)
    path.write_text(path.read_text() + "> " * 50_000 + "deep\n\n" + "- " * 50_000 + "deep\n")
    return []


# ------------------------------------------------------------------------------------------------ outside


def _outside_run(data: Path, scratch: Path) -> Path:
    """A complete run folder outside the data folder, with a secret in its check.log."""
    source = target_run(data)
    folder = scratch / "outside" / "run"
    folder.mkdir(parents=True)
    for name in ("result.json", "solution.py", "benchmark.log"):
        (folder / name).write_bytes((source / name).read_bytes())
    (folder / "check.log").write_text(f"{SECRET}\n")
    return folder


@case("run-folder-link-outside", "outside", "a run folder that is a symlink to a folder outside the data folder",
      expect="runs/", secret=SECRET)
def _run_link(data: Path, scratch: Path) -> list[str]:
    source = target_run(data)
    outside = _outside_run(data, scratch)
    name = source.name
    moved = scratch / "moved"
    source.rename(moved)
    os.symlink(outside, data / "runs" / name)
    return []


@case("writeup-link-outside", "outside", "a writeup that is a symlink to a file outside the data folder",
      expect="writeups/", secret=SECRET)
def _writeup_link(data: Path, scratch: Path) -> list[str]:
    outside = scratch / "outside" / "leak.md"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_text(f"---\ntitle: leak\nverdict: interesting\n---\n{SECRET}\n")
    os.symlink(outside, data / "annotations" / "writeups" / "leak.md")
    return []


@case("annotation-link-outside", "outside", "an annotation that is a symlink to a file outside the data folder",
      expect="annotations/", secret=SECRET)
def _annotation_link(data: Path, scratch: Path) -> list[str]:
    source = target_annotation(data)
    outside = scratch / "outside" / "annotation.yaml"
    outside.parent.mkdir(parents=True, exist_ok=True)
    loaded = yaml.safe_load(source.read_text())
    loaded["summary"] = SECRET
    outside.write_text(yaml.safe_dump(loaded))
    link_outside(outside, source)
    return []


def _file_link(name: str, content: str) -> Callable[[Path, Path], list[str]]:
    def corrupt(data: Path, scratch: Path) -> list[str]:
        outside = scratch / "outside" / name
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_text(content)
        link_outside(outside, target_run(data) / name)
        return []

    return corrupt


case("solution-link-outside", "outside", "solution.py a symlink to a file outside (refused, but silently)",
     expect="solution.py", secret=SECRET)(_file_link("solution.py", f"# {SECRET}\n"))
case("checklog-link-outside", "outside", "check.log a symlink to a file outside", expect="check.log",
     secret=SECRET)(_file_link("check.log", f"{SECRET}\n"))
case("transcript-link-outside", "outside", "the transcript a symlink to a file outside",
     expect="transcript.jsonl", secret=SECRET)(
    _file_link("transcript.jsonl", json.dumps({"type": "kernelbench-session", "version": 1, "model": SECRET})
               + "\n"))


@case("result-link-outside", "outside", "result.json a symlink to a file outside (scored; its tab said missing)",
      expect="result.json", secret=SECRET)
def _result_link(data: Path, scratch: Path) -> list[str]:
    source = target_run(data) / "result.json"
    loaded = json.loads(source.read_text())
    loaded["model"] = SECRET
    outside = scratch / "outside" / "result.json"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_text(json.dumps(loaded))
    link_outside(outside, source)
    return []


def claude_session(session_id: str, text: str = "write a kernel") -> str:
    """A small Claude Code session log (the layout of ~/.claude/projects/*.jsonl) of the given session id."""
    stamp = "2026-05-01T00:00:00Z"
    records = [
        {"type": "user", "sessionId": session_id, "uuid": "u1", "timestamp": stamp,
         "message": {"role": "user", "content": text}},
        {"type": "assistant", "sessionId": session_id, "uuid": "u2", "timestamp": stamp, "requestId": "r1",
         "message": {"id": "m1", "model": "claude-opus-4-7", "role": "assistant",
                     "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 3, "output_tokens": 1}}},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def _claude_with_subagent(session_id: str, place: Callable[[Path, Path, Path], None]):
    def corrupt(data: Path, scratch: Path) -> list[str]:
        run = target_run(data)
        (run / "transcript.jsonl").write_text(claude_session(session_id))
        outside = scratch / "outside" / "subagents" / "agent-x.jsonl"
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_text(claude_session(session_id, SECRET))
        place(run, outside, scratch)
        return []

    return corrupt


def _link_subagent(run: Path, outside: Path, scratch: Path) -> None:
    (run / "s1" / "subagents").mkdir(parents=True)
    os.symlink(outside, run / "s1" / "subagents" / "agent-x.jsonl")


case("subagent-session-id-escape", "outside", "a Claude session id of ../../../scratch/outside: its subagent logs "
     "were looked for outside the run folder", secret=SECRET)(
    _claude_with_subagent("../../../scratch/outside", lambda run, outside, scratch: None))
case("subagent-link-outside", "outside", "a Claude subagent log that is a symlink to a file outside",
     expect="transcript.jsonl", secret=SECRET)(_claude_with_subagent("s1", _link_subagent))
case("subagent-fifo", "special-files", "a FIFO where a Claude subagent log would be", expect="transcript.jsonl",
     heavy=True)(_claude_with_subagent("s1", lambda run, outside, scratch: make_fifo(run / "agent-y.jsonl")))


@case("runs-loop-link", "outside", "a run folder that is a symlink to itself", expect="runs/")
def _runs_loop(data: Path, scratch: Path) -> list[str]:
    os.symlink("loop", data / "runs" / "loop")
    return []


# ------------------------------------------------------------------------------------------------ a folder swapped


def _swap_for_outside(data: Path, scratch: Path) -> None:
    """While the build runs: the target run folder becomes a link to a folder outside the data folder."""
    run = target_run(data)
    run.rename(scratch / "swapped-away")
    os.symlink(scratch / "outside" / "run", run)


@case("run-folder-swapped-mid-build", "outside", "a run folder swapped for a link to a folder outside the data "
      "folder after the build read it (the outside folder's check.log was published)", expect="runs/",
      secret=SECRET, during=_swap_for_outside)
def _prepare_swap(data: Path, scratch: Path) -> list[str]:
    _outside_run(data, scratch)
    return []


def mid_build(applied: Applied, after: Callable[[], None] = lambda: None):
    """Run the case's `during` once every input has been opened and before any page is rendered (the moment
    a racer aims for: the staging folder exists, the pages are not yet written); `after` follows it."""
    from unittest import mock

    from kernelbench.sitegen import pipeline

    render = pipeline.render_changed_pages

    def attack_then_render(*args, **kwargs):
        applied.case.during(applied.data, applied.scratch)
        after()
        return render(*args, **kwargs)

    return mock.patch.object(pipeline, "render_changed_pages", attack_then_render)


# ------------------------------------------------------------------------------------------------ addresses


def add_run(data: Path, run_id: str, check_log: str, **fields) -> Path:
    """A copy of the deck's second run under another run id (and other fields), with its own check.log."""
    source = runs_of(data)[1]
    folder = data / "runs" / run_id
    folder.mkdir()
    for name in ("result.json", "benchmark.log"):
        (folder / name).write_bytes((source / name).read_bytes())
    (folder / "check.log").write_text(check_log)
    _edit_json(folder / "result.json", lambda loaded: loaded.update(run_id=run_id, **fields))
    return folder


def _each_run_its_page(*run_ids: str) -> Callable[[Path], None]:
    """Every run is published, each on a page of its own that shows its own check.log."""
    def check(site: Path) -> None:
        texts = [page.read_text(encoding="utf-8") for page in (site / "runs").glob("*/index.html")]
        for run_id in run_ids:
            shown = [t for t in texts if f"check.log of {visible_html(run_id)}" in t]
            assert len(shown) == 1, f"{run_id!r}: on {len(shown)} pages, not one"

    return check


def visible_html(text: str) -> str:
    from markupsafe import escape

    from kernelbench.text import visible

    return str(escape(visible(text)))


SQUATTED = "R0 v"


@case("run-squats-another-runs-page", "silent", "a run named exactly another run's address (its slug) took that "
      "run's page: both rows linked to one page, showing the squatter", expect="R0-v-",
      check=_each_run_its_page(SQUATTED, "squatter"))
def _squat(data: Path, scratch: Path) -> list[str]:
    from kernelbench.sitegen.pages import slug

    add_run(data, SQUATTED, f"check.log of {SQUATTED}\n")
    add_run(data, slug(SQUATTED), "check.log of squatter\n")
    return []


@case("run-ids-differ-in-case", "silent", "two runs whose ids differ only in letter case (one page on a "
      "case-insensitive disk)", expect="caserun", check=_each_run_its_page("CaseRun", "caserun"))
def _case_ids(data: Path, scratch: Path) -> list[str]:
    add_run(data, "CaseRun", "check.log of CaseRun\n")
    add_run(data, "caserun", "check.log of caserun\n")
    return []


@case("run-ids-differ-in-normal-form", "silent", "two runs whose ids differ only in Unicode normal form (two "
      "pages that look the same)", expect="runs/caf", check=_each_run_its_page("caf\u00e9", "cafe\u0301"))
def _normal_form_ids(data: Path, scratch: Path) -> list[str]:
    add_run(data, "caf\u00e9", "check.log of caf\u00e9\n")
    add_run(data, "cafe\u0301", "check.log of cafe\u0301\n")
    return []


def _index_kept(site: Path) -> None:
    index = (site / "problems" / "index.html").read_text(encoding="utf-8")
    assert "01_fp8_gemm" in index, "problems/index.html is no longer the index of problems"


@case("problem-named-index", "silent", "a run of a problem named 'index', whose page was the problems' index "
      "(problems/index.html)", expect="result.json", check=_index_kept)
def _problem_index(data: Path, scratch: Path) -> list[str]:
    add_run(data, "20260501_009900_claude_claude-opus-4-7_index", "check.log\n", problem="index")
    return []


# ------------------------------------------------------------------------------------------------ markup and text


MARKUP = ('<a href="http://attacker.invalid/">click</a><span style="background:url(http://attacker.invalid/p.png)'
          '">styled</span>')


def no_live_chart_markup(site: Path) -> None:
    """No chart of any page holds a tag but the line break and the hover box's own."""
    import re

    scripts = re.compile(r'<script type="application/json" data-chart="[^"]*">(.*?)</script>', re.DOTALL)
    tags = re.compile(r"<(?!br>|/?extra>)")
    for page in site.rglob("*.html"):
        for blob in scripts.findall(page.read_text(encoding="utf-8")):
            for text in _strings(json.loads(blob)):
                assert not tags.search(text), f"{page}: live markup in a chart: {text[:120]!r}"


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return []


case("gpu-markup-in-chart-title", "markup", "markup in result.json's gpu: plotly rendered a link and styled text "
     "in every problem page's roofline title, and fetched a CSS url()", check=no_live_chart_markup)(
    set_result("gpu", "h100" + MARKUP))
def _markup_everywhere(loaded: dict) -> None:
    loaded.update(harness="h" + MARKUP, model="m" + MARKUP, effort="e" + MARKUP, gpu="g" + MARKUP,
                  problem="01_fp8_gemm" + MARKUP)
    shape = loaded["grading"]["shapes"][0]
    shape.update(shape={"M" + MARKUP: 4096}, flops=1.0e12, bytes=1.0e9)  # drawn on the roofline by its label


case("markup-in-every-chart-field", "markup", "markup in every result.json field that reaches a chart (harness, "
     "model, effort, problem, gpu, a shape's name): heatmap, bars, fast_p, efficiency and roofline",
     check=no_live_chart_markup)(lambda data, scratch: edit_result(data, _markup_everywhere) or [])


def _each_board_its_page(site: Path) -> None:
    pages = [p.name for p in (site / "boards").glob("*.html")]
    folded = [name.casefold() for name in pages]
    assert len(folded) == len(set(folded)), f"two board pages share one address once case is folded: {pages}"


@case("board-squats-another-boards-page", "silent", "two result.json gpu values equal but for letter case (H200 "
      "beside h200): two boards asked for one page address (one file on a case-insensitive disk or server)",
      expect="result.json", check=_each_board_its_page)
def _board_squat(data: Path, scratch: Path) -> list[str]:
    add_run(data, "r-on-h200", "check.log on h200\n", gpu="h200")
    add_run(data, "r-on-H200", "check.log on H200\n", gpu="H200")
    return []


TERMINAL = "\x1b[32mbuilt OK\x1b[0m\x1b]0;owned\x07"


def no_terminal_escapes(site: Path) -> None:
    """Checked on the build's report by the tests (`report_is_inert`); the site holds no ESC either."""
    for page in site.rglob("*.html"):
        assert "\x1b" not in page.read_text(encoding="utf-8"), f"{page}: a raw escape sequence"


@case("terminal-escapes-in-names", "terminal", "a run folder and a run id holding terminal escapes (a fake green "
      "'built OK', the window retitled) reached the build's stderr raw", expect="built OK", check=no_terminal_escapes)
def _terminal(data: Path, scratch: Path) -> list[str]:
    add_run(data, "r" + TERMINAL, "check.log\n")
    folder = data / "runs" / ("s" + TERMINAL)
    (data / "runs" / ("r" + TERMINAL)).rename(folder)  # named other than its run id: reported by name
    return []


INVISIBLE = "claude\u200b/x\u202e"


def names_visible(site: Path) -> None:
    """No page shows a zero-width or bidi character raw; the escaped name is shown."""
    shown = 0
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "\u200b" not in text and "\u202e" not in text, f"{page}: an invisible character shown raw"
        shown += "\\u200b" in text
    assert shown, "the escaped name is on no page"


@case("invisible-characters-in-names", "silent", "a zero-width space and a bidi override in the harness and model "
      "(claude\\u200b/x was a row of its own that read claude/x)", check=names_visible)
def _invisible(data: Path, scratch: Path) -> list[str]:
    edit_result(data, lambda r: r.update(harness="claude\u200b", model="x\u202e"))
    return []


def no_remote_image(site: Path) -> None:
    for page in (site / "writeups").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<img src=\"http" not in text and "<img src=\"//" not in text, f"{page}: a remote image"
    assert "image: pixel" in "".join(p.read_text() for p in (site / "writeups").glob("*.html"))


@case("writeup-remote-image", "outside", "an image from another host in a writeup, fetched by every reader's "
      "browser", check=no_remote_image)
def _remote_image(data: Path, scratch: Path) -> list[str]:
    path = target_writeup(data)
    path.write_text(path.read_text() + "\n![pixel](http://attacker.invalid/pixel.png) ![pixel](//attacker.invalid/p)\n")
    return []


# ------------------------------------------------------------------------------------------------ schema messages


@case("result-schema-line", "schema", "a schema error in result.json is reported with its line and a hint",
      expect="result.json", line=True)
def _schema_line(data: Path, scratch: Path) -> list[str]:
    set_result("session.exit_code", "zero")(data, scratch)
    return []


GROUPS = ("data-loss", "crash", "silent", "special-files", "resources", "outside", "schema", "markup", "terminal")


@dataclass
class Applied:
    """A case applied to a fresh copy of the deck: where things are and how to build it."""

    case: Case
    data: Path
    scratch: Path
    out: Path
    args: list[str] = field(default_factory=list)

    def build_args(self) -> list[str]:
        args = list(self.args)
        if "--out" not in args:
            args += ["--out", str(self.out)]
        return ["--data", str(self.data), *args]


def apply(case_: Case, pristine: Path, root: Path) -> Applied:
    """Copy the pristine deck to `root`/data and corrupt it."""
    import shutil

    data, scratch = root / "data", root / "scratch"
    shutil.copytree(pristine, data, symlinks=True)
    scratch.mkdir(parents=True)
    args = case_.corrupt(data, scratch)
    return Applied(case_, data, scratch, root / "site", args)


def write_pristine(root: Path) -> Path:
    from tests.support.synthetic import write_deck

    write_deck(root, n_runs=DECK_RUNS, transcript_bytes=3000)
    return root
