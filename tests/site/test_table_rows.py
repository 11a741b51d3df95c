"""The runs tables' rows kept between builds (render.TableRows): a table joined from kept rows is byte for byte the
table rendered row by row, after an edit too, and a row's texts are escaped as the template escapes them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelbench.sitegen.pages import Page
from kernelbench.sitegen.render import ROW_FIELDS, TableRows, make_environment

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
TABLE = ('{% from "_macros.html" import run_table %}'
         '{{ run_table("t", runs, url, show_agent=show_agent, show_problem=show_problem) }}')

HOSTILE = ["<script>alert(1)</script>", '" onmouseover="x', "a\u202eb", "zero\u200bwidth", "ctl\x01\x7f", "&amp;",
           "lone \udc80 surrogate", "{{ 7*7 }}", "line\nbreak"]
NUMBERS = [None, 0, 0.0, -0.0, 1, 1.0, 0.5, math.inf, -math.inf, math.nan, 123456789, 1e-9, True, False]


def _view(i: int) -> dict:
    text = HOSTILE[i % len(HOSTILE)]
    number = NUMBERS[i % len(NUMBERS)]
    return {
        "run_id": f"run-{i:04d}{text if i % 7 == 0 else ''}",
        "url": f"runs/run-{i:04d}/index.html",
        "agent": f"agent {text}" if i % 3 else "agent",
        "agent_url": "agents/a/index.html",
        "scripted": bool(i % 5 == 0),
        "problem": f"problem {i % 4}",
        "problem_url": f"problems/p{i % 4}/index.html",
        "gpu": "H100" if i % 2 else text,
        "status": ["OK", "FAIL", "ERR", text][i % 4],
        "verdict": [None, "clean", "reward_hack", text][i % 4],
        "unaudited": bool(i % 6 == 0),
        "peak_fraction": number if type(number) is not bool else 0.25,
        "outcome": text,
        "elapsed_s": number if type(number) is not bool else 12.5,
        "tokens_total": i * 1000 if i % 3 else None,
        "cost_usd": number if type(number) is not bool else 0.01,
        "cost_is_estimate": bool(i % 2),
        "imported": False,  # shown elsewhere, not by the row
    }


def _render(env, runs, page_url="runs/index.html", show_agent=True, show_problem=True) -> str:
    page = Page(page_url, "runs.html", "All runs", {})
    return env.from_string(TABLE).render(runs=runs, url=page.href, show_agent=show_agent, show_problem=show_problem)


def _fresh(runs, **kw) -> str:
    """The table as a build with nothing kept renders it: every row through the macro."""
    env = make_environment(TEMPLATES)
    text = _render(env, runs, **kw)
    assert env.globals["table_rows"].rendered == len(runs)
    return text


@pytest.mark.parametrize("page_url", ["runs/index.html", "problems/p1/index.html", "index.html"])
@pytest.mark.parametrize("columns", [(True, True), (False, True), (True, False), (False, False)])
def test_a_table_joined_from_kept_rows_is_the_table_rendered_row_by_row_after_an_edit_too(tmp_path, page_url,
                                                                                        columns):
    show_agent, show_problem = columns
    kw = {"page_url": page_url, "show_agent": show_agent, "show_problem": show_problem}
    runs = [_view(i) for i in range(200)]
    first = make_environment(TEMPLATES)
    full = _render(first, runs, **kw)
    assert full == _fresh(runs, **kw)
    kept = tmp_path / "rows.marshal"
    first.globals["table_rows"].save(kept, "v1")

    # the next build (another command): every row taken as kept
    env = make_environment(TEMPLATES)
    rows = env.globals["table_rows"]
    rows.load(kept, "v1")
    assert _render(env, runs, **kw) == full
    assert rows.rendered == 0 and not rows.changed

    # one run's row edited (a hostile text, a number of another type), one run gone, one added, the order changed
    edited = [dict(r) for r in runs]
    edited[17]["status"] = "<b>FAIL</b>"
    edited[17]["cost_usd"] = 1  # int where it was a float: printed otherwise
    edited[40]["outcome"] += " <i>again</i>"
    del edited[99]
    edited.append(_view(500))
    edited.reverse()
    again = _render(env, edited, **kw)
    assert again == _fresh(edited, **kw)
    assert rows.rendered == 3
    assert "<b>FAIL</b>" not in again and "&lt;b&gt;FAIL&lt;/b&gt;" in again

    # what was kept is read back as it was written, the gone run's row dropped
    rows.keep_only({r["run_id"] for r in edited})
    rows.save(kept, "v1")
    later = make_environment(TEMPLATES)
    later.globals["table_rows"].load(kept, "v1")
    assert _render(later, edited, **kw) == again
    assert later.globals["table_rows"].rendered == 0


def test_kept_rows_of_other_templates_or_another_page_folder_or_other_columns_are_not_taken(tmp_path):
    runs = [_view(i) for i in range(30)]
    env = make_environment(TEMPLATES)
    _render(env, runs)
    env.globals["table_rows"].save(tmp_path / "rows", "v1")
    for version, kw in [("v2", {}), ("v1", {"page_url": "agents/a/index.html"}), ("v1", {"show_agent": False})]:
        other = make_environment(TEMPLATES)
        other.globals["table_rows"].load(tmp_path / "rows", version)
        assert _render(other, runs, **kw) == _fresh(runs, **kw)
        assert other.globals["table_rows"].rendered == len(runs)
    broken = tmp_path / "broken"
    broken.write_bytes(b"\x00not marshal")
    other = make_environment(TEMPLATES)
    other.globals["table_rows"].load(broken, "v1")
    assert _render(other, runs) == _fresh(runs)


def test_hostile_text_in_a_kept_row_is_still_escaped():
    runs = [_view(i) for i in range(len(HOSTILE) * 4)]
    env = make_environment(TEMPLATES)
    _render(env, runs)
    text = _render(env, runs)  # every row kept
    assert env.globals["table_rows"].rendered == len(runs)
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '" onmouseover="x' not in text and "&#34; onmouseover=&#34;x" in text
    assert "\u202e" not in text and "\u200b" not in text and "\x01" not in text
    assert "{{ 7*7 }}" in text  # printed, never evaluated


def test_a_value_of_another_type_is_rendered_every_time_never_taken_for_an_equal_plain_one():
    class Text(str):
        pass

    view = _view(1)
    assert set(ROW_FIELDS) <= set(view)
    env = make_environment(TEMPLATES)
    rows: TableRows = env.globals["table_rows"]
    _render(env, [view])
    odd = dict(view, outcome=Text(view["outcome"]))
    _render(env, [odd])
    _render(env, [odd])
    assert rows.rendered == 3
    # True and 1, 1.0 and 1: equal in Python, printed otherwise
    for field, one, other in [("tokens_total", 1, True), ("cost_usd", 1.0, 1)]:
        a, b = dict(view, **{field: one}), dict(view, **{field: other})
        assert _render(env, [a]) == _fresh([a]) and _render(env, [b]) == _fresh([b])
