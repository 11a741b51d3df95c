"""Where each kind of page lives inside the site (one place, so links and pages always agree)."""

from __future__ import annotations

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


def problem_url(problem: str) -> str:
    return f"problems/{slug(problem)}.html"


def agent_url(agent: str) -> str:
    return f"agents/{slug(agent)}.html"


def writeup_url(writeup_slug: str) -> str:
    return f"writeups/{slug(writeup_slug)}.html"


def board_url(gpu: str, primary: bool) -> str:
    return LEADERBOARD if primary else f"boards/{slug(gpu)}.html"
