"""Hypothesis strategies for hostile input: JSON values a careless or malicious writer could put anywhere, and
mutations of a document (replace, delete or add a member, nest it thousands deep) placed at a drawn path."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# The fixed budget CI runs (the examples of every test are drawn from a fixed seed, so CI sees the same ones
# every time); KB_FUZZ_SCALE=20 runs twenty times as many, KB_FUZZ_RANDOM=1 draws new ones on every run.
SCALE = float(os.environ.get("KB_FUZZ_SCALE", "1"))
RANDOM = os.environ.get("KB_FUZZ_RANDOM") == "1"


def budget(examples: int, deadline_ms: int | None = 5000) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=deadline_ms,
        derandomize=not RANDOM,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


DEEP_MARK = "__kb_deep_"
NASTY_TEXT = ["", "NaN", "Infinity", "1e999", "-0", "0x10", "true", "null", "<script>alert(1)</script>",
              "</script><img src=x onerror=alert(1)>", "javascript:alert(1)", "\u2028\u2029", "\x00", "\ud800",
              "../../etc/passwd", "/etc/passwd", "a" * 5000, "💥" * 50, "${HOME}", "{{7*7}}", "%s%n"]
NASTY_NUMBERS = [0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, -(10**40), 10**400,
                 1e308, -1e308, 5e-324, -0.0, 0.5, 1e-320, float("nan"), float("inf"), float("-inf")]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(NASTY_NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
# a placeholder that `dumps` turns into a list or object nested that deep (json.dumps itself would recurse)
deep = st.tuples(st.sampled_from(["[", "{"]), st.sampled_from([65, 300, 1025, 5000, 50_000])).map(
    lambda t: f"{DEEP_MARK}{t[0]}{t[1]}")


def dumps(value: Any, **options: Any) -> str:
    """json.dumps that also writes NaN/Infinity and integers of any size, as a careless writer would, and
    expands `deep` placeholders."""
    text = json.dumps(value, allow_nan=True, **options)
    while DEEP_MARK in text:
        at = text.index(f'"{DEEP_MARK}')
        end = text.index('"', at + 1)
        bracket, depth = text[at + 1 + len(DEEP_MARK)], int(text[at + 2 + len(DEEP_MARK):end])
        inner = "[" * depth + "]" * depth if bracket == "[" else '{"a":' * depth + "1" + "}" * depth
        text = text[:at] + inner + text[end + 1:]
    return text


@st.composite
def mutated(draw, document: Any, max_mutations: int = 3) -> Any:
    """`document` (a JSON value) with one to `max_mutations` mutations at drawn paths."""
    document = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, max_mutations))):
        document = _mutate_once(draw, document)
    return document


def _mutate_once(draw, document: Any) -> Any:
    path = _draw_path(draw, document)
    replacement = draw(st.one_of(values, deep, st.just("__delete__"), st.just("__add__")))
    if not path:
        return replacement if replacement not in ("__delete__", "__add__") else document
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if replacement == "__delete__":
        del parent[last]
    elif replacement == "__add__" and isinstance(parent, dict):
        parent[draw(st.text(max_size=12))] = draw(values)
    elif replacement == "__add__":
        parent.insert(last, draw(values))
    else:
        parent[last] = replacement
    return document


def _draw_path(draw, document: Any) -> list:
    """A path from the root to some node (each step a key or an index), drawn one step at a time."""
    path: list = []
    node = document
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)) > 0:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        step = draw(st.sampled_from(keys))
        path.append(step)
        node = node[step]
    return path


@st.composite
def line_log(draw, records: list[dict]) -> bytes:
    """A JSON Lines log: some records mutated, some lines dropped, doubled or garbled, the end maybe cut."""
    out = []
    for record in records:
        action = draw(st.sampled_from(["keep", "keep", "mutate", "mutate", "drop", "double", "garble"]))
        if action == "drop":
            continue
        if action == "garble":
            out.append(draw(st.sampled_from(["{", "not json", "[1,2", '{"type":', "\x00\xff", "NaN", "[]", "7"])))
            continue
        value = draw(mutated(record)) if action == "mutate" else record
        out.append(dumps(value))
        if action == "double":
            out.append(dumps(value))
    data = ("\n".join(out) + "\n").encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and data:
        data = data[: draw(st.integers(0, len(data)))]
    return data
