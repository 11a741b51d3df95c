"""docs/integrity.md is the catalogue the code cites: every class has its row, every guard that can name a finding
is listed there, and every check a suite case expects is one of them."""

from __future__ import annotations

import re
from pathlib import Path

from kernelbench.base.catalogue import CLASS_NAMES
from tests.support.integrity_suite import load_suite

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "integrity.md").read_text()


def guard_names() -> set[str]:
    """Every `check` the package can give a finding: finding("name", ...) calls and CHECK constants."""
    names = set()
    for path in (REPO / "kernelbench").rglob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r'\bfinding\(\s*"([a-z0-9_]+)"', text))
        names |= set(re.findall(r'^(?:[A-Z]+_)?CHECK = "([a-z0-9_]+)"', text, re.MULTILINE))
    return names


def test_every_class_has_its_row():
    for klass, name in CLASS_NAMES.items():
        assert re.search(rf"^\| {klass} \| {re.escape(name)} \|", DOC, re.MULTILINE), f"class {klass} ({name})"


def test_every_guard_is_in_the_catalogue():
    names = guard_names()
    assert {"ast_lint", "launch_audit", "namespace_watch", "template_hash", "dram_bytes"} <= names
    missing = sorted(n for n in names if f"`{n}`" not in DOC)
    assert not missing, f"guards not in docs/integrity.md: {missing}"


def test_every_expected_check_of_the_suite_is_a_guard():
    names = guard_names()
    suite = load_suite(REPO / "tests" / "integrity" / "cases.yaml")
    expected = {check for case in suite.cases for want in (case.expect, case.gpu_expect) if want and want.finding
                for check in want.finding.check}
    assert expected <= names, sorted(expected - names)
