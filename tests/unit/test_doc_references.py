"""Every markdown file the package's code and messages point to is in the repository: a hint or a docstring that
sends a reader to a document must send them somewhere real."""

from __future__ import annotations

import re
from pathlib import Path

import kernelbench

PACKAGE = Path(kernelbench.__file__).resolve().parent
REPO = PACKAGE.parent
# a path-like name ending in .md; names with a placeholder or a glob (`writeups/<slug>.md`, `*.md`) are patterns
# of files the code reads, not references, and are left out below
MARKDOWN_NAME = re.compile(r"[\w./<>*{}-]*\w\.md\b|[\w./<>*{}-]*[>*}]\.md\b")
PATTERN_CHARACTERS = set("<>*{}")
# names that mention another program's file, never one of ours: why each is not a reference
NOT_REFERENCES = {
    "AGENTS.md": "the heading Codex CLI writes above a project's instructions, recognised in its rollouts",
}


def markdown_references(text: str) -> list[str]:
    return [name for name in MARKDOWN_NAME.findall(text)
            if not PATTERN_CHARACTERS & set(name) and name not in NOT_REFERENCES]


def test_every_markdown_file_the_package_names_exists():
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            missing += [f"{path.relative_to(REPO)}:{number}: {name}" for name in markdown_references(line)
                        if not (REPO / name).is_file()]
    assert not missing, "names of markdown files the repository does not have:\n" + "\n".join(missing)


def test_the_scan_finds_a_name_and_leaves_patterns_out():
    assert markdown_references('hint="see DESIGN.md for the fields"') == ["DESIGN.md"]
    assert markdown_references("(docs/grading.md, contract 2)") == ["docs/grading.md"]
    assert markdown_references("<data_dir>/annotations/writeups/<slug>.md and folder.glob('*.md')") == []
    assert markdown_references('"# AGENTS.md instructions"') == []
