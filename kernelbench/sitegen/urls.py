"""Where each kind of page lives inside the site (one place, so links and pages always agree).

Names come from the data, so two of them could ask for one address: a run named exactly another run's slug
(`R0-v-1e6034` beside `R0 v`), or names equal once letter case is folded or Unicode normalised (one address on
a case-insensitive disk or server). `claim` hands out every address of a kind for a build before any link is
made: a name whose address is taken gets one of its own (its slug and a hash of the name), and each clash is
returned so the build reports it. The claims live here for the length of a build, as the one place every link
and page asks.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass

from kernelbench.base.decks import MAIN_DECK
from kernelbench.sitegen.pages import slug
from kernelbench.text import without_invisibles

LEADERBOARD = "index.html"
RUNS_INDEX = "runs/index.html"
PROBLEMS_INDEX = "problems/index.html"
AGENTS_INDEX = "agents/index.html"
WRITEUPS_INDEX = "writeups/index.html"
AUDITS = "audits.html"


@dataclass(frozen=True)
class Clash:
    """A name that asked for another name's address (`moved`: it was given its own), or that reads the same."""

    kind: str
    name: str
    other: str
    address: str  # the slug the name asked for
    moved_to: str | None  # the slug it was given instead; None when both keep their own (they only look alike)


_CLAIMED: dict[str, dict[str, str]] = {}  # kind -> name -> slug, for the build under way


def claim(kind: str, names, reserved: tuple[str, ...] = (), wants=slug) -> list[Clash]:
    """Give every name of `kind` its own slug, distinct from the others' and from `reserved` ones even with
    letter case folded and Unicode normalised; the clashes found, for the build to report. `wants(name)` is the
    address a name asks for (its slug, unless the kind names its pages otherwise).

    A name whose slug carries its own hash proves its claim, so it goes first: a clean name equal to another
    name's hashed slug is the one that moves. Otherwise the order is the names' own, so a build is repeatable."""
    given: dict[str, str] = {}
    taken = {_folded(r): f"the page {r}" for r in reserved}
    seen: dict[str, str] = {}
    clashes: list[Clash] = []
    for name in sorted(set(names), key=lambda n: (wants(n) == n, n)):
        wanted = address = wants(name)
        salt = 0
        while _folded(address) in taken:
            salt += 1
            address = f"{wanted}-{_hash(name, salt)}"
        looks = _lookalike(name)
        if address != wanted:
            clashes.append(Clash(kind, name, taken[_folded(wanted)], wanted, address))
        elif looks in seen:
            clashes.append(Clash(kind, name, seen[looks], wanted, None))
        taken[_folded(address)] = name
        seen.setdefault(looks, name)
        given[name] = address
    _CLAIMED[kind] = given
    return clashes


def forget_claims() -> None:
    """Start a build afresh (the dev server builds many times in one process)."""
    _CLAIMED.clear()


def claims(own_slugs: bool = True) -> dict[str, dict[str, str]]:
    """Every address handed out for the build under way, kind by kind (kept with the build's plan: sitegen.keptplan).
    `own_slugs=False` leaves out each run's that is its own slug (`slug_of` gives those unclaimed): what another
    process needs to answer `slug_of` as this one does, without ten thousand entries."""
    found = {kind: dict(given) for kind, given in _CLAIMED.items()}
    if not own_slugs and "run" in found:
        found["run"] = {name: given for name, given in found["run"].items() if given != slug(name)}
    return found


def restore_claims(kept: dict[str, dict[str, str]]) -> None:
    """The addresses a previous build handed out, for a rebuild whose names are those of that build (each name
    keeps the address it had, clashes and all)."""
    _CLAIMED.clear()
    _CLAIMED.update({kind: dict(given) for kind, given in kept.items()})


def _folded(address: str) -> str:
    return unicodedata.normalize("NFKC", address).casefold()


def _lookalike(name: str) -> str:
    """What a reader sees of a name: letter case, Unicode form and invisible characters make no difference."""
    return _folded(without_invisibles(name))


def _hash(name: str, salt: int) -> str:
    return hashlib.blake2b(f"{salt}:{name}".encode(), digest_size=3).hexdigest()


def slug_of(kind: str, name: str) -> str:
    """The name's slug as claimed for this build (a name nobody claimed: its plain slug)."""
    return _CLAIMED.get(kind, {}).get(name) or slug(name)


def run_url(run_id: str) -> str:
    return f"runs/{slug_of('run', run_id)}/index.html"


def run_dir(run_id: str) -> str:
    return f"runs/{slug_of('run', run_id)}"


def problem_url(problem: str, deck: str = MAIN_DECK) -> str:
    """Our deck's problems at problems/<id>.html; another deck's under problems/<deck>/ (same name, other problem)."""
    if deck == MAIN_DECK:
        return f"problems/{slug_of('problem', problem)}.html"
    return f"problems/{slug(deck)}/{slug_of('problem:' + deck, problem)}.html"


def agent_url(agent: str) -> str:
    return f"agents/{slug_of('agent', agent)}.html"


def writeup_url(writeup_slug: str) -> str:
    return f"writeups/{slug_of('writeup', writeup_slug)}.html"


# A board is named by its key (`Board.key`: the GPU on our deck, `<deck>-<gpu>` on another), and both parts come
# from the data: a GPU named `kbh-h100-h200` on our deck has the key of the kbh-h100 deck's h200 board, and a board
# keyed `x-diff` asks for board x's diff page. Boards and diff pages therefore claim their addresses together,
# each by its own identity (`board_identity`), and a page that asks for a taken address is given its own.
BOARD_PAGES = "board"


def board_identity(page: str, deck: str, gpu: str) -> str:
    """The claimed name of a board's page (`page`: "board" or "diff"), distinct for every (deck, GPU)."""
    return f"{page}\x00{deck}\x00{gpu}"


def board_address(identity: str) -> str:
    """The address a board page asks for: its key's slug, with `-diff` for the comparison page."""
    page, deck, gpu = identity.split("\x00")
    key = gpu if deck == MAIN_DECK else f"{deck}-{gpu}"
    return slug(key) + ("-diff" if page == "diff" else "")


def board_url(deck: str, gpu: str, primary: bool) -> str:
    """A board's page (the front page for the primary board)."""
    return LEADERBOARD if primary else f"boards/{_board_slug('board', deck, gpu)}.html"


def diff_url(deck: str, gpu: str) -> str:
    """The regraded board's comparison with the board it was regraded from."""
    return f"boards/{_board_slug('diff', deck, gpu)}.html"


def _board_slug(page: str, deck: str, gpu: str) -> str:
    identity = board_identity(page, deck, gpu)
    return _CLAIMED.get(BOARD_PAGES, {}).get(identity) or board_address(identity)
