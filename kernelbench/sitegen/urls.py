"""Where each kind of page lives inside the site (one place, so links and pages always agree)."""

from __future__ import annotations

from kernelbench.base.decks import MAIN_DECK
from kernelbench.sitegen.pages import slug

LEADERBOARD = "index.html"
RUNS_INDEX = "runs/index.html"
PROBLEMS_INDEX = "problems/index.html"
AGENTS_INDEX = "agents/index.html"
WRITEUPS_INDEX = "writeups/index.html"
AUDITS = "audits.html"


def run_url(run_id: str) -> str:
    return f"runs/{slug(run_id)}/index.html"


def run_dir(run_id: str) -> str:
    return f"runs/{slug(run_id)}"


def problem_url(problem: str, deck: str = MAIN_DECK) -> str:
    """Our deck's problems at problems/<id>.html; another deck's under problems/<deck>/ (same name, other problem)."""
    if deck == MAIN_DECK:
        return f"problems/{slug(problem)}.html"
    return f"problems/{slug(deck)}/{slug(problem)}.html"


def agent_url(agent: str) -> str:
    return f"agents/{slug(agent)}.html"


def writeup_url(writeup_slug: str) -> str:
    return f"writeups/{slug(writeup_slug)}.html"


def board_url(key: str, primary: bool) -> str:
    """A board by its key (`Board.key`: the GPU on our deck, `<deck>-<gpu>` on another)."""
    return LEADERBOARD if primary else f"boards/{slug(key)}.html"


def diff_url(key: str) -> str:
    """The regraded board's comparison with the board it was regraded from."""
    return f"boards/{slug(key)}-diff.html"
