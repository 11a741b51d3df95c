"""Fuzz the site's other inputs: result.json, annotation YAML and writeup markdown, each alone against its
loader, then all at once through a whole build. Whatever a file holds, loading it gives a record or diagnostics
(never an exception), a record holds only numbers its fields mean, and the build finishes with strict JSON
exports, the data folder untouched and no markup from the inputs unescaped."""

from __future__ import annotations

import json
import math
import random
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from hostile_values import budget, dumps, line_log, mutated
from hypothesis import given
from hypothesis import strategies as st

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_yaml
from kernelbench.results.dataset import load_dataset
from kernelbench.results.leaderboard import build_boards, export_rows
from kernelbench.sitegen.manifest import hash_data
from kernelbench.sitegen.pipeline import BuildConfig, build_site
from kernelbench.sitegen.views import run_view, shown_runs
from kernelbench.sitegen.writeups import render_markdown
from tests.support import hostile
from tests.support.synthetic import AGENTS, make_result

RUN_ID = "20260501_000000_claude_claude-opus-4-7_01_fp8_gemm"
INT64 = 2**63 - 1
PAYLOAD = "<script>alert(1)</script>"


def valid_result() -> dict:
    result = make_result(RUN_ID, AGENTS[0], "01_fp8_gemm", 1, random.Random(0),
                         datetime(2026, 5, 1, tzinfo=timezone.utc), "transcript.jsonl")
    return result.model_dump(mode="json", by_alias=True)


VALID_RESULT = valid_result()
VALID_ANNOTATION = {
    "version": 1, "run_id": RUN_ID, "model": "claude-opus-4-7", "harness": "claude", "problem": "01_fp8_gemm",
    "peak_fraction": 0.5, "verdict": "rubric_leak", "summary": "Upcasts to fp32.", "implication": "cuBLAS.",
    "quotes": [{"file": "solution.py", "lines": [1, 2], "label": "the GEMM", "text": "import torch\n\n"}],
}


def check_numbers(value, where: str = "") -> None:
    """Every float finite and every integer within 64 bits, all the way down."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_numbers(item, f"{where}[{index}]")
    elif isinstance(value, float):
        assert math.isfinite(value), where
    elif isinstance(value, int) and not isinstance(value, bool):
        assert -INT64 - 1 <= value <= INT64, where


def data_folder(root: Path, result_text: str | None = None, annotation_text: str | None = None,
                writeup_text: str | None = None) -> Path:
    run = root / "runs" / RUN_ID
    run.mkdir(parents=True, exist_ok=True)
    (run / "result.json").write_text(result_text or json.dumps(VALID_RESULT), encoding="utf-8",
                                     errors="surrogatepass")
    (run / "solution.py").write_text("import torch\n\nclass Model: ...\n")
    (root / "annotations" / "writeups").mkdir(parents=True, exist_ok=True)
    if annotation_text is not None:
        (root / "annotations" / f"{RUN_ID}.yaml").write_text(annotation_text, encoding="utf-8",
                                                            errors="surrogatepass")
    if writeup_text is not None:
        (root / "annotations" / "writeups" / "w.md").write_text(writeup_text, encoding="utf-8",
                                                                errors="surrogatepass")
    return root


@st.composite
def result_texts(draw) -> str:
    text = dumps(draw(mutated(VALID_RESULT, max_mutations=4)), indent=2)
    if draw(st.integers(0, 9)) == 0:  # now and then a cut or a stray character as well
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", "}", "\x00", "NaN", "\ud800", "[[[["]))
    return text


@budget(150)
@given(text=result_texts())
def test_result_json_loads_or_is_reported(text, tmp_path_factory):
    root = data_folder(tmp_path_factory.mktemp("result"), result_text=text)
    dataset = load_dataset(root)
    assert all(d.path is not None and d.hint for d in dataset.diagnostics), dataset.diagnostics
    record = dataset.runs.get(RUN_ID)
    if record is None:
        assert dataset.diagnostics
        return
    check_numbers(record.result.model_dump(mode="python"))
    boards = build_boards(dataset)
    json.dumps(export_rows(boards), allow_nan=False)
    hash_data(run_view(record, dataset, shown_runs(boards)))


YAML_SPICE = ["&a ", "*a ", "!!python/object:os.system ", "!!binary ", "<<: *a\n", "? ", "[", "{", "]", "}",
              "|\n  ", ">-\n  ", "%YAML 1.1\n", "---\n", "...\n", "\t", ": ", "- ", "#", "'", '"', "\\", "\n  "]


@st.composite
def annotation_texts(draw) -> str:
    document = draw(mutated(VALID_ANNOTATION, max_mutations=3))
    try:
        text = yaml.safe_dump(json.loads(dumps(document)) if "__kb_deep_" not in str(document) else document,
                              sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, RecursionError):
        text = dumps(document)  # JSON is YAML too
    for _ in range(draw(st.integers(0, 3))):  # raw YAML syntax spliced in anywhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(YAML_SPICE)) + text[at:]
    if draw(st.integers(0, 5)) == 0:
        text += hostile.laughs(draw(st.integers(2, 9)), draw(st.integers(2, 9)))
    return text


@budget(150)
@given(text=annotation_texts())
def test_annotation_yaml_loads_or_is_reported(text, tmp_path_factory):
    root = data_folder(tmp_path_factory.mktemp("annotation"), annotation_text=text)
    dataset = load_dataset(root)
    assert all(d.path is not None for d in dataset.diagnostics), dataset.diagnostics
    record = dataset.annotations.get(RUN_ID)
    if record is not None:
        check_numbers(record.annotation.model_dump(mode="python"))


@budget(300)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>?,'\"#%@` \n\t0.e") + ["\u2028", "\x85"]),
                    max_size=300))
def test_any_yaml_text_parses_or_raises_a_located_error(text):
    try:
        load_yaml(Path("x.yaml"), text)
    except KernelBenchError as exc:
        assert exc.diagnostic.path is not None


MARKDOWN_TOKENS = ["# ", "## ", "> ", "- ", "* ", "1. ", "```", "~~~", "    ", "`", "**", "_", "[", "]", "(", ")",
                   "![", "|", "---", "\n", "\n\n", "<", ">", "&", "&amp;", "&#x3C;", "\\", "javascript:alert(1)",
                   "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
                   "[x](<javascript:alert(1)>)", RUN_ID, RUN_ID + ".", "http://example.com", "<http://e.com>",
                   "| a | b |\n|---|---|\n", "word ", "[^1]", "\u2028", "\x00"]


@st.composite
def markdown_texts(draw) -> str:
    parts = draw(st.lists(st.sampled_from(MARKDOWN_TOKENS) | st.text(max_size=6), max_size=80))
    text = "".join(parts)
    if draw(st.integers(0, 9)) == 0:  # deep nesting, which markdown parsers recurse on
        text += draw(st.sampled_from(["> ", "- ", "* ", "[", "*", "_", "`"])) * draw(st.integers(100, 20_000))
    return text


@budget(200)
@given(body=markdown_texts())
def test_writeup_markdown_renders_escaped(body):
    html = str(render_markdown(body, lambda run_id: f"../runs/{run_id}/" if run_id == RUN_ID else None))
    lowered = html.lower()
    assert "<script" not in lowered and "<img" not in lowered
    assert 'href="javascript:' not in lowered and "onerror=" not in html.replace("onerror=alert", "")


@budget(100)
@given(body=markdown_texts(), front=st.one_of(
    st.just("title: T\nverdict: interesting\n"), st.text(max_size=60),
    st.builds(lambda d: dumps(d), mutated({"title": "T", "verdict": "rubric_leak", "runs": [RUN_ID]}))))
def test_writeup_loads_or_is_reported(body, front, tmp_path_factory):
    root = data_folder(tmp_path_factory.mktemp("writeup"), writeup_text=f"---\n{front}\n---\n{body}")
    dataset = load_dataset(root)
    assert all(d.path is not None for d in dataset.diagnostics), dataset.diagnostics


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    from tests.support.synthetic import write_deck

    return write_deck(tmp_path_factory.mktemp("deck") / "data", n_runs=2, transcript_bytes=2000).root


@budget(12, deadline_ms=None)
@given(result=result_texts(), annotation=annotation_texts(), body=markdown_texts(), data=st.data())
def test_whole_build_survives_every_input_at_once(pristine, tmp_path_factory, result, annotation, body, data):
    """One run's result.json, its annotation, the writeup and the other run's transcript all hostile at once."""
    from seeds import LINE_SEEDS

    root = tmp_path_factory.mktemp("build")
    deck = root / "data"
    shutil.copytree(pristine, deck)
    runs = hostile.runs_of(deck)
    (runs[0] / "result.json").write_text(result.replace(RUN_ID, runs[0].name), errors="surrogatepass")
    (deck / "annotations" / f"{runs[0].name}.yaml").write_text(annotation.replace(RUN_ID, runs[0].name),
                                                              errors="surrogatepass")
    (deck / "annotations" / "writeups" / "fp8-leak.md").write_text(f"---\ntitle: T\nverdict: interesting\n---\n"
                                                                   f"{body}", errors="surrogatepass")
    (runs[1] / "transcript.jsonl").write_bytes(data.draw(line_log(LINE_SEEDS["normalized"])))
    before = {p: p.read_bytes() for p in deck.rglob("*") if p.is_file()}
    report = build_site(BuildConfig(data_dir=deck, out_dir=root / "site", jobs=1))
    assert {p: p.read_bytes() for p in deck.rglob("*") if p.is_file()} == before
    payload = json.loads((root / "site" / "data" / "leaderboard.json").read_text(),
                         parse_constant=lambda c: pytest.fail(f"{c} in leaderboard.json"))
    assert isinstance(payload["cells"], list)
    assert (root / "site" / "runs" / runs[1].name / "index.html").is_file()
    for page in (root / "site").rglob("*.html"):
        assert PAYLOAD not in page.read_text(errors="replace"), page
    assert all(d.path is not None for d in report.diagnostics)
