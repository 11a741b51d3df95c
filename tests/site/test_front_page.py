"""The front page leads with the board where most real models ran: a first reader came to see models."""

from __future__ import annotations

from types import SimpleNamespace

from kernelbench.base.decks import MAIN_DECK
from kernelbench.sitegen.plan import board_order


def _board(deck: str, agents: list[str], trials: int = 1) -> SimpleNamespace:
    return SimpleNamespace(deck=deck, cells=[SimpleNamespace(agent=a, n_trials=trials) for a in agents])


def test_the_board_of_real_models_leads_over_a_larger_board_of_scripted_lines():
    scripted = {"scripted/eager", "scripted/triton"}
    ours = _board(MAIN_DECK, ["scripted/eager", "scripted/triton"] * 9, trials=3)
    regraded = _board("kbh-h100", ["claude/opus", "codex/gpt"])
    assert sorted([ours, regraded], key=lambda b: board_order(b, scripted))[0] is regraded


def test_among_equals_our_own_deck_leads():
    ours, theirs = _board(MAIN_DECK, ["claude/opus"]), _board("kbh-h100", ["codex/gpt"], trials=5)
    assert sorted([theirs, ours], key=lambda b: board_order(b, set()))[0] is ours
