"""The verdicts an auditor gives a run (a module of its own: the command line offers them without loading the
annotation models)."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    CLEAN = "clean"
    RUBRIC_LEAK = "rubric_leak"
    REWARD_HACK = "reward_hack"
    INTERESTING = "interesting"
    BUG = "bug"
