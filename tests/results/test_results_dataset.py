"""load_dataset: every kind of bad input becomes a diagnostic with file and line; good input loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results_builders import SOLUTION

from kernelbench.problems.baselines import Line, ProblemBaselines
from kernelbench.results.annotation import Quote
from kernelbench.results.dataset import (
    UNVERIFIABLE_NOTE,
    QuoteState,
    check_quote,
    load_dataset,
    quote_matches,
)

RUN = "20260101_000000_claude_opus_01_demo"


def annotation_yaml(run_id: str = RUN, verdict: str = "rubric_leak", quote_text: str | None = None,
                    lines: str = "[4, 5]", extra: str = "") -> str:
    if quote_text is None:
        quote_text = "".join(SOLUTION.splitlines(keepends=True)[3:5])
    body = "".join(f"      {line}" if line.strip() else line for line in quote_text.splitlines(keepends=True))
    return (f"run_id: {run_id}\nharness: claude\nmodel: opus\nverdict: {verdict}\nsummary: Doubles the input.\n"
            f"{extra}quotes:\n  - file: solution.py\n    lines: {lines}\n    label: the kernel\n    text: |\n"
            f"{body}implication: none really\n")


def messages(dataset) -> list[str]:
    return [str(d) for d in dataset.diagnostics]


def test_empty_folder_is_an_empty_dataset(tmp_path: Path):
    dataset = load_dataset(tmp_path)
    assert not dataset.runs and not dataset.annotations and not dataset.diagnostics


def test_run_and_annotation_with_verified_quote(tmp_path, make_run, write_annotation):
    make_run(RUN)
    write_annotation(f"{RUN}.yaml", annotation_yaml())
    dataset = load_dataset(tmp_path)
    assert messages(dataset) == []
    record = dataset.annotations[RUN]
    assert record.run_known and record.quotes_ok
    assert [c.state for c in record.quote_checks] == [QuoteState.VERIFIED]
    assert dataset.annotation_for(RUN).verdict.value == "rubric_leak"


def test_quote_with_tab_trailing_space_and_unicode_matches(tmp_path, make_run, write_annotation):
    make_run(RUN)
    text = "".join(SOLUTION.splitlines(keepends=True)[3:6])
    assert "\t" in text and "   \n" in text and "ü" in text
    # a YAML block cannot keep trailing spaces, so the auditor writes a quoted scalar
    import json
    write_annotation(f"{RUN}.yaml", annotation_yaml(quote_text="").replace(
        "    text: |\n", f"    text: {json.dumps(text)}\n").replace("[4, 5]", "[4, 6]"))
    dataset = load_dataset(tmp_path)
    assert [c.state for c in dataset.annotations[RUN].quote_checks] == [QuoteState.VERIFIED], messages(dataset)


def test_quote_mismatch_is_reported_at_the_quote_line_and_kept(tmp_path, make_run, write_annotation):
    make_run(RUN)
    path = write_annotation(f"{RUN}.yaml", annotation_yaml(quote_text="def kernel(y):\n    return y * 3\n"))
    dataset = load_dataset(tmp_path)
    record = dataset.annotations[RUN]
    assert record.quote_checks[0].state is QuoteState.MISMATCH
    assert "line 4 differs" in record.quote_checks[0].note
    [diag] = dataset.errors
    assert Path(diag.path) == path and diag.line == 7  # the `- file:` item of the quote
    assert "kernelbench annotate new" in diag.hint


def test_quote_beyond_the_end_and_missing_file(tmp_path, make_run, write_annotation):
    make_run(RUN)
    write_annotation(f"{RUN}.yaml", annotation_yaml(lines="[4, 99]"))
    dataset = load_dataset(tmp_path)
    assert dataset.annotations[RUN].quote_checks[0].state is QuoteState.OUT_OF_RANGE
    (tmp_path / "runs" / RUN / "solution.py").unlink()
    dataset = load_dataset(tmp_path)
    assert dataset.annotations[RUN].quote_checks[0].state is QuoteState.MISSING_FILE
    assert "not in the run directory" in messages(dataset)[0]


def test_imported_run_without_files_is_unverifiable_not_an_error(tmp_path, make_run, write_annotation):
    make_run(RUN, source="import:kernelbench-hard")
    write_annotation(f"{RUN}.yaml", annotation_yaml())
    dataset = load_dataset(tmp_path)
    check = dataset.annotations[RUN].quote_checks[0]
    assert check.state is QuoteState.UNVERIFIABLE and check.note == UNVERIFIABLE_NOTE
    assert not check.state.is_problem and dataset.diagnostics == []


def test_malformed_json_result_names_line_and_leaves_run_out(tmp_path, make_run):
    folder = make_run(RUN)
    (folder / "result.json").write_text('{\n  "run_id": "x",\n  "harness": \n}\n')
    dataset = load_dataset(tmp_path)
    assert RUN not in dataset.runs
    [diag] = dataset.diagnostics
    assert "invalid JSON" in diag.message and diag.line == 4 and diag.path == folder / "result.json"


def test_result_schema_error_is_reported(tmp_path, make_run):
    folder = make_run(RUN)
    text = (folder / "result.json").read_text().replace('"gpu": "h100_sxm"', '"gpu": 7')
    (folder / "result.json").write_text(text)
    dataset = load_dataset(tmp_path)
    assert RUN not in dataset.runs and "gpu" in messages(dataset)[0]


def test_run_directory_without_result(tmp_path):
    (tmp_path / "runs" / RUN).mkdir(parents=True)
    dataset = load_dataset(tmp_path)
    [diag] = dataset.diagnostics
    assert "without result.json" in diag.message and "kernelbench grade" in diag.hint


def test_duplicate_run_id(tmp_path, make_run):
    make_run(RUN)
    copy = tmp_path / "runs" / (RUN + "_copy")
    copy.mkdir()
    (copy / "result.json").write_text((tmp_path / "runs" / RUN / "result.json").read_text())
    dataset = load_dataset(tmp_path)
    assert list(dataset.runs) == [RUN]
    [diag] = dataset.diagnostics
    assert "duplicate run id" in diag.message and diag.line == 3


def test_unknown_verdict_names_its_line(tmp_path, make_run, write_annotation):
    make_run(RUN)
    path = write_annotation(f"{RUN}.yaml", annotation_yaml(verdict="sneaky"))
    dataset = load_dataset(tmp_path)
    assert RUN not in dataset.annotations
    [diag] = dataset.diagnostics
    assert diag.path == path and diag.line == 4 and "verdict" in diag.message


def test_invalid_utf8_and_bad_yaml(tmp_path, make_run, write_annotation):
    make_run(RUN)
    bad = tmp_path / "annotations" / f"{RUN}.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"run_id: x\nsummary: caf\xe9\n")
    other = write_annotation("other.yaml", "run_id: [unclosed\nverdict: clean\n")
    dataset = load_dataset(tmp_path)
    assert not dataset.annotations
    by_path = {Path(d.path): d for d in dataset.diagnostics}
    assert "UTF-8" in by_path[bad].message and by_path[bad].line == 2
    assert "invalid YAML" in by_path[other].message and by_path[other].line is not None


def test_annotation_for_unknown_run_is_marked(tmp_path, write_annotation):
    write_annotation(f"{RUN}.yaml", annotation_yaml())
    dataset = load_dataset(tmp_path)
    record = dataset.annotations[RUN]
    assert not record.run_known and dataset.annotation_for(RUN) is None
    assert record.quote_checks[0].state is QuoteState.NO_RUN
    [diag] = dataset.diagnostics
    assert "unknown run" in diag.message and diag.line == 1


def test_exponent_number_is_a_number(tmp_path, make_run, write_annotation):
    make_run(RUN)
    write_annotation(f"{RUN}.yaml", annotation_yaml(extra="peak_fraction: 5e-2\n"))
    dataset = load_dataset(tmp_path)
    assert dataset.annotations[RUN].annotation.peak_fraction == pytest.approx(0.05)


def test_identity_mismatch_is_a_warning(tmp_path, make_run, write_annotation):
    make_run(RUN)
    write_annotation(f"{RUN}.yaml", annotation_yaml().replace("model: opus", "model: sonnet"))
    dataset = load_dataset(tmp_path)
    [diag] = dataset.diagnostics
    assert diag.severity == "warning" and diag.line == 3 and "sonnet" in diag.message


def test_second_annotation_for_same_run(tmp_path, make_run, write_annotation):
    make_run(RUN)
    write_annotation(f"{RUN}.yaml", annotation_yaml())
    write_annotation("zz_copy.yaml", annotation_yaml())
    dataset = load_dataset(tmp_path)
    assert any("second annotation" in m for m in messages(dataset))


def test_writeups(tmp_path, make_run):
    make_run(RUN)
    folder = tmp_path / "annotations" / "writeups"
    folder.mkdir(parents=True)
    (folder / "fp8.md").write_text(f"---\ntitle: The fp8 leak\nproblem: 01_demo\nverdict: rubric_leak\n"
                                   f"runs: [{RUN}, 20990101_000000_ghost_x_01_demo]\n---\n# Body\n\ntext\n")
    (folder / "plain.md").write_text("# no front matter\n")
    (folder / "bad.md").write_text("---\ntitle: x\nverdict: nope\n---\n")
    dataset = load_dataset(tmp_path)
    [writeup] = dataset.writeups
    assert writeup.slug == "fp8" and writeup.body.startswith("# Body") and writeup.body_line == 7
    assert writeup.unknown_runs == ["20990101_000000_ghost_x_01_demo"]
    text = "\n".join(messages(dataset))
    assert "cites unknown run" in text and "no front matter" in text and "bad.md:3" in text


def test_problems_and_baselines(tmp_path):
    problem = tmp_path / "problems" / "01_demo"
    (problem / "baselines").mkdir(parents=True)
    (problem / "problem.yaml").write_text(
        "id: 01_demo\ntitle: Demo\ndescription: d\nregime: memory\nceiling: dram\nshapes:\n  - {n: 4}\n"
        "flops: n\nbytes: 8*n\ntolerance:\n  float32: {atol: 1e-5, rtol: 5e-2}\n")
    good = ProblemBaselines(problem="01_demo", gpu="h100_sxm", lines={"eager": Line(peak_fraction=0.1)})
    (problem / "baselines" / "h100_sxm.json").write_text(good.model_dump_json())
    (problem / "baselines" / "b200.json").write_text(good.model_dump_json())  # filed under the wrong GPU
    dataset = load_dataset(tmp_path)
    assert dataset.problems["01_demo"].spec.tolerance["float32"].rtol == pytest.approx(0.05)
    assert dataset.baselines_for("01_demo", "h100_sxm").lines["eager"].peak_fraction == 0.1
    assert dataset.baselines_for("01_demo", "b200") is None
    [diag] = dataset.diagnostics
    assert diag.path.name == "b200.json"


DEMO_SPEC = ("id: 01_demo\ntitle: Demo\ndescription: d\nregime: memory\nceiling: dram\nshapes:\n  - {n: 4}\n"
             "flops: n\nbytes: 8*n\n")


def _problem(root: Path, name: str = "01_demo", spec: str = DEMO_SPEC) -> Path:
    folder = root / "problems" / name
    folder.mkdir(parents=True)
    (folder / "problem.yaml").write_text(spec)
    (folder / "reference.py").write_text("# the reference\n")
    return folder


def test_a_problem_is_the_value_every_command_opens(tmp_path):
    from kernelbench.problems.problem import open_problem

    folder = _problem(tmp_path)
    (folder / "PROMPT.txt").write_text("Write the kernel.\n")
    [record] = load_dataset(tmp_path).problems.values()
    opened = open_problem(folder)
    assert record.problem.content_hash == opened.content_hash and record.spec == opened.spec
    assert record.problem.prompt == "Write the kernel.\n" and record.problem.spec_file == folder / "problem.yaml"


@pytest.mark.parametrize("spec, message, line", [
    (DEMO_SPEC.replace("id: 01_demo", "id: 02_other"), "does not match the folder name", 1),
    (DEMO_SPEC.replace("flops: n\n", "flops: n\nflops_typo: 1\n"), "unknown key 'flops_typo'", 9),
    (DEMO_SPEC.replace("regime: memory\nceiling: dram\n", "regime: null\nceiling: null\n"),
     "regime, ceiling must be given", 4),
    ("id: 01_demo\ntitle: [unclosed\n", "invalid YAML", 3),
])
def test_a_bad_problem_is_reported_at_its_file_and_line_and_left_out(tmp_path, spec, message, line):
    """The problem is checked by the one validator every command uses: a spec that grading would refuse (no
    roofline, say) is refused here too, at its file and line, with what to do."""
    folder = _problem(tmp_path, spec=spec)
    dataset = load_dataset(tmp_path)
    assert dataset.problems == {}
    [diag] = dataset.diagnostics
    assert diag.path == folder / "problem.yaml" and message in diag.message and diag.hint
    assert diag.line == line, str(diag)


def test_a_problem_file_linked_from_outside_the_data_is_refused_unread(tmp_path):
    data = tmp_path / "data"
    folder = _problem(data)
    secret = tmp_path / "secret.py"
    secret.write_text("SECRET = 1\n")
    (folder / "reference.py").unlink()
    (folder / "reference.py").symlink_to(secret)
    dataset = load_dataset(data)
    assert dataset.problems == {}
    [diag] = dataset.diagnostics
    assert diag.path == folder / "reference.py" and "outside" in diag.message and diag.hint


def test_another_benchmarks_problem_is_reported_and_none_of_its_code_runs(tmp_path):
    """A KernelBench-Hard problem's spec is read by running its shapes.py: the site runs no problem's code."""
    import shutil

    toy = Path(__file__).parents[1] / "foreign" / "decks" / "kbh-toy" / "01_toy_scaled_gemm"
    folder = tmp_path / "problems" / toy.name
    shutil.copytree(toy, folder)
    marker = tmp_path / "ran"
    (folder / "shapes.py").write_text(f"open({str(marker)!r}, 'w').close()\nSHAPES = [{{'M': 8}}]\n")
    dataset = load_dataset(tmp_path)
    assert dataset.problems == {} and not marker.exists()
    [diag] = dataset.diagnostics
    assert diag.path == folder / "problem.yaml" and "another benchmark's layout" in diag.message and diag.hint


def test_a_folder_in_no_problem_layout_is_no_problem_but_keeps_its_baselines(tmp_path):
    notes = tmp_path / "problems" / "01_demo"
    (notes / "baselines").mkdir(parents=True)
    (notes / "README.md").write_text("notes\n")
    good = ProblemBaselines(problem="01_demo", gpu="h100_sxm", lines={"eager": Line(peak_fraction=0.1)})
    (notes / "baselines" / "h100_sxm.json").write_text(good.model_dump_json())
    dataset = load_dataset(tmp_path)
    assert dataset.problems == {} and dataset.diagnostics == []
    assert dataset.baselines_for("01_demo", "h100_sxm") is not None


def test_the_parse_cache_reopens_a_problem_only_when_one_of_its_files_changes(tmp_path):
    import pickle

    from kernelbench.results.dataset import ParseCache

    folder = _problem(tmp_path)
    cache = ParseCache()
    first = load_dataset(tmp_path, cache=cache).problems["01_demo"].problem
    kept = ParseCache(entries=pickle.loads(pickle.dumps(cache.entries)))  # as a later command gets it back
    again = load_dataset(tmp_path, cache=kept).problems["01_demo"].problem
    assert kept.misses == 0 and again == first and again.layout is first.layout
    (folder / "reference.py").write_text("# an edited reference\n")
    edited = load_dataset(tmp_path, cache=kept).problems["01_demo"].problem
    assert kept.misses == 1 and edited.content_hash != first.content_hash


def test_quote_match_tolerates_only_one_final_newline():
    assert quote_matches("a\nb", "a\nb\n") and quote_matches("a\nb\n", "a\nb")
    assert not quote_matches("a\nb\n\n", "a\nb") and not quote_matches("a\n b", "a\nb")


def test_quote_never_reads_outside_the_run(tmp_path, make_run):
    folder = make_run(RUN)
    (tmp_path / "secret.txt").write_text("x\n")
    from results_builders import result

    from kernelbench.results.dataset import RunRecord
    record = RunRecord(RUN, folder, result(RUN), folder / "result.json")
    quote = Quote.model_construct(file="../../secret.txt", lines=[1, 1], label="", text="x\n")
    assert check_quote(quote, record).state is QuoteState.MISSING_FILE


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(result_bytes=st.binary(max_size=300), annotation_text=st.text(max_size=300),
       writeup_text=st.text(max_size=200))
def test_loading_never_raises_on_garbage(tmp_path, result_bytes, annotation_text, writeup_text):
    root = tmp_path / "garbage"
    (root / "runs" / RUN).mkdir(parents=True, exist_ok=True)
    (root / "runs" / RUN / "result.json").write_bytes(result_bytes)
    (root / "annotations" / "writeups").mkdir(parents=True, exist_ok=True)
    (root / "annotations" / f"{RUN}.yaml").write_text(annotation_text, encoding="utf-8", errors="surrogatepass")
    (root / "annotations" / "writeups" / "w.md").write_text("---\n" + writeup_text, encoding="utf-8",
                                                            errors="surrogatepass")
    dataset = load_dataset(root)
    assert all(d.path is not None for d in dataset.diagnostics)


def test_run_file_lookup_stays_inside_the_run_folder(tmp_path):
    from kernelbench.results.dataset import RunRecord

    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    run = tmp_path / "runs" / "r1"
    (run / "sub").mkdir(parents=True)
    (run / "solution.py").write_text("pass\n")
    (run / "sub" / "log.txt").write_text("log\n")
    (run / "inner-link.py").symlink_to(run / "solution.py")
    (run / "escape").symlink_to(outside)
    record = RunRecord(run_id="r1", path=run, result=None, result_path=run / "result.json")
    assert record.file("solution.py") == (run / "solution.py").resolve()
    assert record.file("sub/log.txt") == (run / "sub" / "log.txt").resolve()
    assert record.file("inner-link.py") == (run / "solution.py").resolve()
    for name in ("escape", "sub", "missing.py", "..", ".", "", "../secret.txt", "a\x00b"):
        assert record.file(name) is None, name


def test_run_file_paths_resolve_through_linked_run_folders(tmp_path, make_run):
    from kernelbench.results.dataset import load_dataset

    plain = make_run("20260101_000000_claude_opus_01_demo")
    linked = make_run("20260101_000001_claude_opus_01_demo")
    elsewhere = tmp_path / "elsewhere" / linked.name
    elsewhere.parent.mkdir()
    linked.rename(elsewhere)
    linked.symlink_to(elsewhere, target_is_directory=True)
    runs = load_dataset(tmp_path).runs
    assert runs[plain.name].file("solution.py") == (plain / "solution.py").resolve()
    assert runs[linked.name].file("solution.py") == (elsewhere / "solution.py").resolve()


def test_a_compact_result_comes_back_from_the_cache_exactly():
    """A compact result's run view part travels as JSON only when JSON gives it back exactly: tuples, enums, str
    subclasses (markup), NaN, integers past 64 bits, non-string keys and a negative zero come back as they were."""
    import math
    import pickle

    from markupsafe import Markup

    from kernelbench.results.dataset import CompactResult, QuoteState, RunFacts

    facts = RunFacts("r", "a", "h", "m", None, "main", "p", "g", None, "harness", False, None, None, "G", (), False)
    plain = {"z": 1, "a": [1.0, 2, None, True, "x", {"k": -0.0}], "s": "<script>\u2028</script>"}
    odd = [{"t": (1, 2)}, {"m": Markup("<b>")}, {"e": QuoteState.VERIFIED}, {"n": float("nan")}, {"big": 2**70}, {1: "x"},
           {"nested": [{"t": (1,)}]}]
    for derived in [plain, *odd]:
        back = pickle.loads(pickle.dumps(CompactResult(b"d" * 16, None, facts, derived, ("x", None)))).derived
        assert list(back) == list(derived)
        for key, value in derived.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(back[key])
                continue
            assert type(back[key]) is type(value) and repr(back[key]) == repr(value)
