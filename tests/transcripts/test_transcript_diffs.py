"""Diff building and counting take shortcuts over whole texts; these hold them equal to the line-by-line
definitions (str.splitlines), on any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernelbench.transcripts import diffs

# texts made mostly of the characters that matter here: line ends of every kind, diff markers, header prefixes
TEXT = st.text(alphabet=st.sampled_from(list("ab +-\n\r\x0c\u2028é😀")) | st.characters(), max_size=60)


def creation_by_lines(path: str, content: str) -> str:
    lines = content.splitlines()
    return diffs.header(path, created=True) + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines)


def stats_by_lines(diff: str) -> tuple[int, int]:
    lines = diff.splitlines()
    return (sum(x.startswith("+") and not x.startswith("+++ ") for x in lines),
            sum(x.startswith("-") and not x.startswith("--- ") for x in lines))


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_a_created_file_diff_is_its_lines_prefixed(content: str) -> None:
    assert diffs.from_creation("k.py", content) == creation_by_lines("k.py", content)


def test_created_file_edges() -> None:
    for content in ("", "\n", "\n\n", "a", "a\n", "a\n\n", "\na", "a\nb", "a\nb\n", "+++ x\n--- y"):
        assert diffs.from_creation("k.py", content) == creation_by_lines("k.py", content), repr(content)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_stats_count_added_and_removed_lines(diff: str) -> None:
    assert diffs.stats(diff) == stats_by_lines(diff)


def test_stats_edges() -> None:
    for diff in ("", "+", "-", "+++ a", "--- a\n+++ b\n", "--- a\n+++ b\n+x\n-y\n+++ z\n--- w\n", "+\n+\n",
                 "--- /dev/null\n+++ b/k\n@@ -0,0 +1,2 @@\n+a\n+++ b\n", "-\n-- x\n--- y\n"):
        assert diffs.stats(diff) == stats_by_lines(diff), repr(diff)
