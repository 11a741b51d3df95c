"""The input door (kernelbench/inputs.py), the bounded readers (fileio) and the number types, one rule at a time."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from kernelbench import inputs
from kernelbench.errors import KernelBenchError
from kernelbench.fileio import MAX_ALIAS_NODES, MAX_DEPTH, json_line_of, load_json, load_yaml
from kernelbench.inputs import InputRefused
from kernelbench.base import numbers
from kernelbench.results.dataset import RunRecord, count_lines, file_lines
from tests.support.hostile import laughs, make_fifo, make_socket


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "plain.txt").write_text("plain\n")
    return folder.resolve()


def test_a_regular_file_inside_is_read(root):
    assert inputs.locate(root / "plain.txt", root) == root / "plain.txt"
    assert inputs.read_bytes(root / "plain.txt", root, inputs.ANNOTATION) == b"plain\n"
    assert inputs.locate(root / "missing.txt", root) is None


def test_links_are_followed_only_inside_the_root(root, tmp_path):
    (root / "inner").symlink_to(root / "plain.txt")
    assert inputs.locate(root / "inner", root) == root / "plain.txt"
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (root / "escape").symlink_to(outside)
    with pytest.raises(InputRefused, match="outside") as caught:
        inputs.read_bytes(root / "escape", root, inputs.ANNOTATION)
    assert caught.value.diagnostic.path == root / "escape" and caught.value.diagnostic.hint


@pytest.mark.parametrize("make, what", [
    (lambda p: os.symlink(p.name, p), "loop of symbolic links"),
    (lambda p: os.symlink(p.parent / "nowhere", p), "does not exist"),
    (make_fifo, "FIFO"),
    (make_socket, "socket"),
    (lambda p: p.mkdir(), "folder"),
])
def test_what_is_not_a_regular_file_is_refused_by_type(root, make, what):
    path = root / "odd"
    make(path)
    started = time.monotonic()
    with pytest.raises(InputRefused, match=what):
        inputs.read_bytes(path, root, inputs.ANNOTATION)
    assert time.monotonic() - started < 5  # a FIFO is never opened (opening one waits for a writer)


def test_a_file_over_its_cap_is_refused_unread_and_a_shown_file_is_cut(root):
    big = root / "big.log"
    big.write_bytes(b"x" * (inputs.ANNOTATION.max_bytes + 1))
    with pytest.raises(InputRefused, match="over the 1.0 MiB"):
        inputs.read_bytes(big, root, inputs.ANNOTATION)
    head, size = inputs.read_head(big, root, inputs.Kind("test", 10))
    assert head == b"x" * 10 and size == inputs.ANNOTATION.max_bytes + 1


def test_run_files_stay_inside_the_run_folder(tmp_path):
    run = tmp_path / "runs" / "r1"
    (run / "sub").mkdir(parents=True)
    (run / "sub" / "log.txt").write_text("log\n")
    (tmp_path / "runs" / "other.txt").write_text("x")
    (run / "up").symlink_to(tmp_path / "runs" / "other.txt")
    (run / "linked-sub").symlink_to(tmp_path / "runs", target_is_directory=True)
    record = RunRecord(run_id="r1", path=run, result=None, result_path=run / "result.json")
    assert record.locate("sub/log.txt") == (run / "sub" / "log.txt").resolve()
    for name in ("up", "linked-sub/other.txt", "../other.txt", "/etc/passwd", "", "a\x00b"):
        with pytest.raises(InputRefused):
            record.locate(name)
        assert record.file(name) is None


def _run_folder(root: Path) -> Path:
    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "check.log").write_text("inside\n")
    return run


def test_an_opened_folder_swapped_for_a_link_outside_is_still_read_as_opened(root, tmp_path):
    run = _run_folder(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "check.log").write_text("SECRET\n")
    folder = inputs.Folder.open(run, root)
    assert folder.changed_report() is None
    run.rename(tmp_path / "aside")
    run.symlink_to(outside, target_is_directory=True)
    assert folder.read_bytes("check.log", inputs.SHOWN) == b"inside\n"
    assert folder.read_head("check.log") == (b"inside\n", 7)
    report = folder.changed_report()
    assert report is not None and "changed while" in report.diagnostic.message and report.diagnostic.hint


def test_a_file_swapped_for_a_link_inside_an_opened_folder_is_refused(root, tmp_path):
    run = _run_folder(root)
    (tmp_path / "secret.txt").write_text("SECRET\n")
    folder = inputs.Folder.open(run, root)
    (run / "check.log").unlink()
    (run / "check.log").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InputRefused, match="outside"):
        folder.read_bytes("check.log", inputs.SHOWN)


def test_a_transcript_swapped_for_a_link_after_its_check_is_not_read(root, tmp_path):
    """The transcript parser opens the file itself, by the checked name through the held folder: a link put there
    between the check and the parser's open leads nowhere (issue of the race on the reader's own open)."""
    from kernelbench.transcripts import load

    run = _run_folder(root)
    (run / "transcript.jsonl").write_text('{"type": "user", "message": {"content": "inside"}}\n')
    (tmp_path / "secret.jsonl").write_text('{"type": "user", "message": {"content": "SECRET"}}\n')
    folder = inputs.Folder.open(run, root)
    path = folder.path_for_reader("transcript.jsonl")
    (run / "transcript.jsonl").unlink()
    (run / "transcript.jsonl").symlink_to(tmp_path / "secret.jsonl")
    with pytest.raises(OSError):
        load(path)


def test_a_folder_on_the_way_to_a_transcript_swapped_for_a_link_is_not_followed(root, tmp_path):
    run = _run_folder(root)
    (run / "logs").mkdir()
    (run / "logs" / "t.jsonl").write_bytes(b"inside\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "t.jsonl").write_bytes(b"SECRET\n")
    folder = inputs.Folder.open(run, root)
    path = folder.path_for_reader("logs/t.jsonl")
    (run / "logs").rename(run / "logs-aside")
    (run / "logs").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        assert os.read(fd, 100) == b"inside\n"  # the folder held when the name was checked, not the link
    finally:
        os.close(fd)
    folder.close()


def test_a_run_folder_linked_from_outside_is_not_opened(root, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (root / "runs").mkdir()
    (root / "runs" / "r1").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(InputRefused, match="outside"):
        inputs.Folder.open(root / "runs" / "r1", root)


def test_a_folder_part_swapped_for_a_link_between_check_and_open_is_reported(root, tmp_path, monkeypatch):
    run = _run_folder(root)
    real_locate = inputs.locate

    def locate_then_swap(path, at, folder=False):  # the racer wins between the check and the open
        found = real_locate(path, at, folder=folder)
        run.rename(tmp_path / "aside")
        run.symlink_to(tmp_path / "aside", target_is_directory=True)
        return found

    monkeypatch.setattr(inputs, "locate", locate_then_swap)
    with pytest.raises(InputRefused, match="changed while"):
        inputs.Folder.open(run, root)


# ------------------------------------------------------------------------------------------------ JSON and YAML


@pytest.mark.parametrize("text, message", [
    ('{"a":\n  NaN}', "NaN is not a JSON number"),
    ('{"a":\n  -Infinity}', "Infinity is not a JSON number"),
    ('{"a":\n  1e999}', "infinity"),
    ("[" * 100_000 + "]" * 100_000, f"nested more than {MAX_DEPTH} levels"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} levels"),
])
def test_json_that_is_not_strict_or_too_deep_is_reported_with_its_line(text, message):
    with pytest.raises(KernelBenchError, match=message) as caught:
        load_json(Path("r.json"), text)
    assert caught.value.diagnostic.hint
    if "\n" in text:
        assert caught.value.diagnostic.line == 2


def test_json_nested_to_the_limit_loads():
    assert load_json(Path("r.json"), "[" * MAX_DEPTH + "]" * MAX_DEPTH)


@pytest.mark.parametrize("text, message", [
    (laughs(9, 9), "aliases expand"),
    (laughs(10, 10), "aliases expand"),
    ("a: " + "[" * 50_000 + "]" * 50_000, "nested deeper"),
    ("".join(f"{' ' * i}k{i}:\n" for i in range(200)) + " " * 200 + "x\n", "nested deeper"),
    # aliases that stay small but each reach deeper: the depth they stand for counts
    ("l0: &a0 " + "[" * 40 + "]" * 40 + "\nl1: &a1 " + "[" * 40 + "*a0" + "]" * 40 + "\n", "nested deeper"),
])
def test_yaml_beyond_the_limits_is_refused_before_it_is_built(text, message):
    started = time.monotonic()
    with pytest.raises(KernelBenchError, match=message):
        load_yaml(Path("a.yaml"), text)
    assert time.monotonic() - started < 10


def test_yaml_within_the_limits_loads():
    few = "base: &b {x: 1}\n" + "".join(f"k{i}: *b\n" for i in range(MAX_ALIAS_NODES // 3))  # 3 nodes each
    assert load_yaml(Path("a.yaml"), few)["k0"] == {"x": 1}
    assert load_yaml(Path("a.yaml"), '"\\ud83d\\ude00": x\n') == {"😀": "x"}
    with pytest.raises(KernelBenchError, match="lone surrogate"):
        load_yaml(Path("a.yaml"), 'a: "\\ud800"\n')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(document=st.dictionaries(st.text(max_size=5), json_values, min_size=1, max_size=5), data=st.data(),
       indent=st.sampled_from([None, 1, 2]))
def test_json_line_of_finds_the_line_of_the_deepest_key(document, data, indent):
    text = json.dumps(document, indent=indent)
    path, node = [], document
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        step = data.draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        path.append(step)
        node = node[step]
    line = json_line_of(text, path)
    if not path or indent is None:
        assert line == 1
        return
    key = path[-1] if isinstance(path[-1], str) else None
    if key is not None:
        assert json.dumps(key) in text.splitlines()[line - 1]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(text=st.lists(st.sampled_from(["a", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028",
                                              "\u2029", "é"]), max_size=30).map("".join),
       first=st.integers(1, 8), span=st.integers(0, 4))
def test_file_lines_number_lines_as_splitlines_does(text, first, span):
    lines = text.splitlines(keepends=True)
    last = first + span
    expected = "".join(lines[first - 1:last]) if last <= len(lines) else None
    assert file_lines(text, first, last) == expected
    assert count_lines(text) == len(lines)


# ------------------------------------------------------------------------------------------------ numbers


class Numbers(BaseModel):
    finite: numbers.Finite = 0.0
    fraction: numbers.Fraction = 0.0
    count: numbers.Count = 0
    int64: numbers.Int64 = 0
    seconds: numbers.Seconds = 0.0
    shape: dict[str, numbers.ShapeValue] = {}


@pytest.mark.parametrize("field, value", [
    ("finite", float("nan")), ("finite", float("inf")), ("finite", True), ("finite", "0.5"), ("finite", 10**400),
    ("fraction", -0.5), ("fraction", 1e308), ("count", -1), ("count", 2**63), ("count", 1e30), ("count", 2.5),
    ("int64", -(2**63) - 1), ("int64", False), ("seconds", -60), ("seconds", 1e12),
    ("shape", {"M": 10**40}), ("shape", {"M": 1e40}), ("shape", {"M": [1]}), ("shape", {"M": float("nan")}),
])
def test_a_number_that_cannot_mean_its_field_is_refused(field, value):
    with pytest.raises(ValidationError):
        Numbers(**{field: value})


@pytest.mark.parametrize("field, value", [
    ("finite", 5e-324), ("finite", -1e308), ("fraction", 0), ("fraction", 3.5), ("count", 2**63 - 1),
    ("count", 2.0), ("int64", -(2**63)), ("seconds", 2700), ("shape", {"M": 4096, "dtype": "bf16", "causal": True}),
])
def test_a_number_that_means_its_field_is_kept(field, value):
    assert getattr(Numbers(**{field: value}), field) == value


# ------------------------------------------------------------------------------------------------ transcript sidecars

KIMI = [{"type": "turn.prompt", "time": 1767225600000, "input": "write a kernel"},
        {"type": "llm.request", "time": 1767225600100, "model": "kimi-k2.6"},
        {"type": "context.append_loop_event", "time": 1767225600200,
         "event": {"type": "content.part", "part": {"type": "text", "text": "TEXT"}}}]


def _kimi(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [dict(r) for r in KIMI]
    records[2] = {**records[2], "event": {"type": "content.part", "part": {"type": "text", "text": text}}}
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_subagent_logs_beside_a_transcript_follow_the_policy(tmp_path):
    from kernelbench.transcripts import load

    agents = tmp_path / "run" / "agents"
    _kimi(agents / "main" / "wire.jsonl", "main")
    _kimi(agents / "inside" / "wire.jsonl", "inside")
    _kimi(tmp_path / "elsewhere" / "wire.jsonl", "SECRET")
    (agents / "linked").mkdir()
    (agents / "linked" / "wire.jsonl").symlink_to(tmp_path / "elsewhere" / "wire.jsonl")
    (agents / "piped").mkdir()
    make_fifo(agents / "piped" / "wire.jsonl")
    session = load(agents / "main" / "wire.jsonl")
    texts = [e.text for e in session.walk() if e.text]
    assert session.format == "kimi-wire" and "inside" in texts and "SECRET" not in texts
    assert session.issue_counts.get("sidecar_refused") == 2
