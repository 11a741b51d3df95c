"""Fuzz every transcript format: a valid log with records mutated (values replaced by hostile ones, members
deleted or added, nesting thousands deep, lines dropped, doubled or cut) must load without an exception, hold only
numbers a session can hold, and lay out in the viewer without a crash or any unescaped markup."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hostile_values import budget, dumps, line_log, mutated
from hypothesis import given
from hypothesis import strategies as st
from seeds import DOCUMENT_SEEDS, LINE_SEEDS, real_seeds

from kernelbench.transcripts import load
from kernelbench.transcripts.summary import summarize
from kernelbench.transcripts.viewer import write_viewer

INT64 = 2**63 - 1
EPOCH_MIN, EPOCH_MAX = 0.0, 32_503_680_000.0  # 1970 to the year 3000: the times a session can hold
PAYLOAD = "<script>alert(1)</script>"


def check_session(session) -> None:
    """Only numbers a real session can hold reach the viewer and the totals, and no record made the parser give
    up on the whole log (a record it trips over is kept raw on its own, and the rest is read as usual)."""
    assert "parser_failed" not in session.issue_counts, session.issues[:1]
    for event in session.walk():
        assert event.ts is None or (type(event.ts) in (int, float) and EPOCH_MIN <= event.ts <= EPOCH_MAX)
        assert event.duration_s is None or 0 <= event.duration_s <= EPOCH_MAX
        assert event.exit_code is None or (type(event.exit_code) is int and abs(event.exit_code) <= INT64 + 1)
        if event.usage is not None:
            _check_usage(event.usage)
    _check_usage(session.tokens)
    for value in (session.start, session.end):
        assert value is None or EPOCH_MIN <= value <= EPOCH_MAX
    assert session.duration_s is None or 0 <= session.duration_s <= EPOCH_MAX
    assert session.cost_usd is None or (math.isfinite(session.cost_usd) and session.cost_usd >= 0)


def _check_usage(usage) -> None:
    for name in ("input", "output", "cache_read", "cache_write", "reasoning"):
        value = getattr(usage, name)
        assert type(value) is int and 0 <= value <= INT64, (name, value)


def check_viewer(session, out: Path) -> None:
    # the first screen is HTML in the page: markup from the log must arrive escaped (the chunk files are
    # scripts holding JSON strings, which the viewer puts in the page as text; the browser tests run them)
    html = write_viewer(session, out, asset_prefix="../static/", budget_s=2700.0)
    assert PAYLOAD not in html
    json.dumps(summarize(session), allow_nan=False)  # `transcript show --json` stays strict JSON


def load_and_view(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    session = load(path)
    check_session(session)
    out = tmp_path / "viewer"
    out.mkdir(exist_ok=True)
    check_viewer(session, out)


@pytest.mark.parametrize("fmt", sorted(LINE_SEEDS))
@budget(40)
@given(data=st.data())
def test_line_formats_survive_mutation(fmt, data, tmp_path_factory):
    log = data.draw(line_log(LINE_SEEDS[fmt]))
    load_and_view(tmp_path_factory.mktemp(fmt), "session.jsonl", log)


@pytest.mark.parametrize("fmt", sorted(DOCUMENT_SEEDS))
@budget(40)
@given(data=st.data())
def test_document_formats_survive_mutation(fmt, data, tmp_path_factory):
    document = data.draw(mutated(DOCUMENT_SEEDS[fmt], max_mutations=4))
    text = dumps(document, indent=2).encode("utf-8", "surrogatepass")
    load_and_view(tmp_path_factory.mktemp(fmt), "session.json", text)


def test_real_logs_survive_mutation(shared_fixtures, tmp_path_factory):
    seeds = real_seeds(shared_fixtures)

    @budget(25)
    @given(fmt=st.sampled_from(sorted(seeds)), data=st.data())
    def run(fmt, data):
        log = data.draw(line_log(seeds[fmt]))
        load_and_view(tmp_path_factory.mktemp(fmt), "session.jsonl", log)

    run()


@pytest.mark.parametrize("fmt", sorted(LINE_SEEDS))
def test_every_seed_is_read_as_its_format(fmt, tmp_path):
    path = tmp_path / "seed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in LINE_SEEDS[fmt]))
    session = load(path)
    assert session.format == fmt and session.events and not session.issue_counts
