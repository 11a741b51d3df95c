"""Gather, validate and derive everything, then decide which pages the site has and what each depends on.

Loading and derivation belong to `kernelbench.results` (`load_dataset`, `build_boards`); this module only
arranges their output into pages. Nothing here writes a file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import stat
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kernelbench.base.decks import MAIN_DECK
from kernelbench.errors import Diagnostic
from kernelbench.inputs import Folder, NotPlain
from kernelbench.results.dataset import Dataset, KeptInputs, ParseCache, RunRecord, load_dataset
from kernelbench.sitegen import urls, views
from kernelbench.sitegen.buildcache import viewer_cache_file
from kernelbench.sitegen.manifest import FileHasher, Unknown, hash_data
from kernelbench.sitegen.pages import Page
from kernelbench.sitegen.render import code_hash
from kernelbench.sitegen.runpage import ViewerReuse, quote_excerpts, run_tabs, transcript_name

# The boards, their charts and the problem, diff and writeup pages are imported where the whole deck is planned: a
# rebuild that plans only the pages of the runs an edit touched (keptplan.py) needs none of them.
if TYPE_CHECKING:
    from kernelbench.results.leaderboard import Board


@dataclass
class SiteData:
    """The loaded dataset and everything derived from it that several pages share."""

    dataset: Dataset
    boards: list[Board]
    runs: dict[str, dict]  # run_id -> run view
    scripted: set[str] = field(default_factory=set)
    viewer_version: str = "raw"
    view_digests: dict[int, str] = field(default_factory=dict)  # id of a run view (in `runs`) -> its hash_data

    def hashed(self, inputs: dict) -> dict:
        """A page's inputs as its fingerprint takes them (Page.hashed): its run view ("run") or list of run views
        ("runs") replaced by their digests, which stand for them exactly."""
        found = dict(inputs)
        if "run" in found:
            found["run"] = self.view_digests[id(found["run"])]
        if "runs" in found:
            found["runs"] = [self.view_digests[id(view)] for view in found["runs"]]
        return found

    def shown_path(self, path: Path | str | None) -> str:
        """A path as the site shows it: relative to the data (or problems) folder, so a published site does not
        carry the build machine's folders. The dataset builds its paths from those folders, so a string prefix
        test suffices (resolving every path costs a file-system walk per path)."""
        if path is None:
            return ""
        text = str(path)
        for root in (self.dataset.data_dir, self.dataset.problems_dir and self.dataset.problems_dir.parent):
            prefix = str(root).rstrip("/") + "/" if root else None
            if prefix and text.startswith(prefix):
                return text[len(prefix):]
        return text

    def shown_diagnostic(self, diag) -> str:
        return str(dataclasses.replace(diag, path=self.shown_path(diag.path) or None))

    def runs_of(self, **match) -> list[dict]:
        return [r for r in self.runs.values() if all(r[k] == v for k, v in match.items())]


@dataclass
class SitePlan:
    pages: list[Page]
    diagnostics: list[Diagnostic]
    boards: list[Board]
    dataset: Dataset | None = None
    data: SiteData | None = None  # what the pages were planned from (kept in part for the next build: keptplan.py)

    def changed_inputs(self) -> list[Diagnostic]:
        """The run folders that changed while the site was built: their pages show them as first opened."""
        if self.dataset is None:
            return []
        found = (folder.changed_report() for _, record in sorted(self.dataset.runs.items())
                 if (folder := record.opened_folder()) is not None)  # a folder never opened showed nothing
        return [report.diagnostic for report in found if report is not None]

    def write_exports(self, staging: Path) -> None:
        from kernelbench.results.leaderboard import export_csv, export_json

        export_json(self.boards, staging / "data" / "leaderboard.json")
        export_csv(self.boards, staging / "data" / "leaderboard.csv")


class PlanMemo:
    """What a process that builds again and again (`--watch`, `--serve`) derived in its previous build, each value
    keyed by the very objects it was derived from. The parse cache hands back the same object for the same bytes
    (results.dataset.ParseCache), and no loaded or derived value is ever changed in place, so the same key objects
    give the same value: a rebuild after one edit derives the board's trial and the run view of one run again,
    not of every run. Each build keeps only the entries it used (which hold their key objects, so an id is never
    taken for another object's)."""

    def __init__(self) -> None:
        self.trials: dict[tuple[int, int, int], tuple] = {}
        self.views: dict[tuple, tuple] = {}
        # run id -> (record, annotation record, run view, viewer version, page, the keys its files were hashed under)
        self.pages: dict[str, tuple] = {}
        self._trials_used: dict[tuple[int, int, int], tuple] = {}
        self._views_used: dict[tuple, tuple] = {}
        self._pages_used: dict[str, tuple] = {}

    def trial(self, result, annotation, baselines):
        from kernelbench.results.leaderboard import make_trial

        key = (id(result), id(annotation), id(baselines))
        kept = self.trials.get(key) or (result, annotation, baselines, make_trial(result, annotation, baselines))
        self._trials_used[key] = kept
        return kept[-1]

    def run_view(self, record: RunRecord, dataset: Dataset, shown: dict) -> tuple[dict, str]:
        annotation = dataset.annotation_for(record.run_id)
        cell = shown.get(record.run_id)
        result = record.compact if record.compact is not None else record.result
        key = (record.run_id, id(result), annotation.verdict if annotation else None,
               bool(cell and cell.unaudited))
        kept = self.views.get(key)
        if kept is None:
            view = views.run_view(record, dataset, shown)
            kept = (result, view, hash_data(view))
        self._views_used[key] = kept
        return kept[1], kept[2]

    def run_page(self, record: RunRecord, annotation, view: dict, viewer: str, hasher: FileHasher) -> Page | None:
        """The previous build's page of this run when it was planned from the very same run record (kept only while
        its folder is unchanged: results.dataset.KeptInputs), annotation record and run view: its file hashes are
        the previous build's, carried into this build's manifest."""
        kept = self.pages.get(record.run_id)
        if kept is None or kept[0] is not record or kept[1] is not annotation or kept[2] is not view:
            return None
        page, keys = kept[4], kept[5]
        if kept[3] != viewer or page.settle is not None or not all(hasher.carry(key) for key in keys):
            return None
        self._pages_used[record.run_id] = kept
        return page

    def keep_page(self, record: RunRecord, annotation, view: dict, viewer: str, page: Page, keys: list[str]) -> None:
        self._pages_used[record.run_id] = (record, annotation, view, viewer, page, keys)

    def forget_pages(self) -> None:
        """The previous build's file hashes are not in the manifest this build starts from (another process built
        the site since): no page is taken from it."""
        self.pages = {}

    def end_build(self) -> None:
        self.trials, self._trials_used = self._trials_used, {}
        self.views, self._views_used = self._views_used, {}
        self.pages, self._pages_used = self._pages_used, {}


class KeptRunPages:
    """The run pages a command's full build takes from the previous build without planning them again (at ten
    thousand runs, planning every run page looks at 50,000 files' statuses only to find their fingerprints the
    same). A run's page is taken when its fingerprint is, by what the previous build kept, the one it had:

    - the code and templates are those of the previous build (snapshot.code_changed), and the plan it kept
      (keptplan.KeptPlan) goes with its file-system record;
    - the run's folder and every annotation file that named it are, entry for entry, as that build read them
      (snapshot.unchanged_names), the run's annotation now is the one that named it then (or it has none, as then),
      and the run keeps its address;
    - its run view has the digest it had (it takes its board cell's mark, which moves with the board) and the
      transcript viewer is the same.

    The page's record in the previous manifest (its fingerprint and what its render reported) is kept, and its
    files' records carried from the previous manifest (`folders`); a page whose file is not in the site is
    planned in full (`Page.replan`)."""

    def __init__(self, plan, runs: set[str], annotations: set[str], runs_root: str, annotations_root: str,
                 pages: dict[str, list]):
        self.plan = plan  # keptplan.KeptPlan
        self.runs, self.annotations = runs, annotations
        self.runs_root, self.annotations_root = runs_root, annotations_root
        self.pages = pages  # the previous manifest's
        self.folders: list[str] = []  # where the files of the pages taken are (manifest.FileRecords' groups)
        self._naming: dict[str, tuple[str, ...]] | None = None

    def _naming_now(self, dataset: Dataset) -> dict[str, tuple[str, ...]]:
        """run id -> the annotation files that name it now."""
        if self._naming is None:
            found: dict[str, list[str]] = defaultdict(list)
            for path, run_id in dataset.annotation_run_ids.items():
                found[run_id].append(Path(path).name)
            self._naming = {run_id: tuple(sorted(names)) for run_id, names in found.items()}
        return self._naming

    def page(self, data: SiteData, record: RunRecord, hasher: FileHasher) -> Page | None:
        run_id = name = record.path.name
        if record.run_id != run_id or name not in self.runs or name not in self.plan.runs:
            return None
        if (str(record.path.parent) != self.runs_root or (record.opened is None and record.unopened is None)
                or data.viewer_version != self.plan.viewer):
            return None
        _, view_digest, _, naming, _, _ = self.plan.run(name)
        view = data.runs[run_id]
        if data.view_digests[id(view)] != view_digest:
            return None
        if tuple(naming) != self._naming_now(data.dataset).get(run_id, ()) or len(naming) > 1:
            return None
        if any(file not in self.annotations for file in naming):
            return None
        annotation = data.dataset.annotations.get(run_id)
        if (annotation is None) != (not naming):
            return None
        if annotation is not None and (annotation.path.name != naming[0]
                                       or str(annotation.path.parent) != self.annotations_root):
            return None
        address = urls.slug_of("run", run_id)
        if address != (self.plan.claims.get("run", {}).get(run_id) or urls.slug(run_id)):
            return None
        url = urls.run_url(run_id)
        old = self.pages.get(url)
        if old is None:
            return None
        # where the page's files are recorded: the run folder (RUN_PAGE_FILES are plain names), and the transcript's
        folder = record.folder_text  # (a folder the load took unopened stays so)
        self.folders.append(folder)
        transcript = transcript_name(record)
        if "/" in transcript:
            self.folders.append(os.path.dirname(os.path.join(folder, transcript)))  # inputs.Folder.plain_shown
        return Page(url, "run.html", run_id, None, kind="run", parallel=True, kept_digest=old[0],
                    replan=lambda: run_page(data, record, hasher))


def plan_site(config, hasher: FileHasher, cache: ParseCache | None = None, memo: PlanMemo | None = None,
              kept: KeptInputs | None = None, kept_pages: KeptRunPages | None = None) -> SitePlan:
    from kernelbench.sitegen.diffpage import diff_pages
    from kernelbench.sitegen.problems import problem_pages
    from kernelbench.sitegen.writeups import writeup_pages

    dataset = load_dataset(Path(config.data_dir), config.resolved_problems_dir(), cache=cache, kept=kept,
                           compact=views.compact_result)
    data = derive(dataset, memo, kept_pages.plan if kept_pages is not None else None)
    pages = [
        *leaderboard_pages(data),
        runs_index_page(data),
        *problem_pages(data),
        *diff_pages(data),
        *agent_pages(data),
        audits_page(data),
        *writeup_pages(data),
        *run_pages(data, hasher, memo, kept_pages),
    ]
    if memo is not None:
        memo.end_build()
    return SitePlan(pages=pages, diagnostics=list(dataset.diagnostics), boards=data.boards, dataset=dataset,
                    data=data)


def derive(dataset: Dataset, memo: PlanMemo | None = None, kept_plan=None) -> SiteData:
    """`kept_plan`: the previous build's plan (keptplan.KeptPlan), when it was planned by this very code (see
    KeptRunPages): a run view whose result and key (`view_key`) are those it kept takes the digest it kept."""
    from kernelbench.results.leaderboard import build_boards, make_trial

    dataset.diagnostics += claim_addresses(dataset)
    boards = build_boards(dataset, make=memo.trial if memo else make_trial)
    dataset.diagnostics += claim_board_addresses(boards, dataset)
    shown = views.shown_runs(boards)
    run_view = memo.run_view if memo else _run_view
    if memo is None and kept_plan is not None:
        run_view = functools.partial(_kept_run_view, kept_plan)
    found = {run_id: run_view(record, dataset, shown) for run_id, record in sorted(dataset.runs.items())}
    runs = {run_id: view for run_id, (view, _) in found.items()}
    return SiteData(
        dataset=dataset,
        boards=boards,
        runs=runs,
        view_digests={id(view): digest for view, digest in found.values()},
        scripted=views.scripted_agents(dataset),
        viewer_version=viewer_version(),
    )


def shared_of_result(record: RunRecord, result_digest: str) -> tuple:
    """What the pages other than a run's own take from its result.json beyond its run view (views.run_view, whose
    digest their fingerprints take): when it started (the order of its cell's trials), the baselines its grading
    recorded (the boards' speed-ups and the problem pages' baseline lines), the GPU's name (its board's title), and,
    for a run regraded from another benchmark's board, the whole result (`result_digest`: the diff page compares it
    with the published cell). A result.json whose run view and this stay as they were changes its own page only."""
    facts = record.facts
    return (None if facts.started is None else facts.started.isoformat(),
            facts.baselines,
            facts.gpu_name,
            result_digest if facts.regraded else None)


def _run_view(record: RunRecord, dataset: Dataset, shown: dict) -> tuple[dict, str]:
    view = views.run_view(record, dataset, shown)
    return view, hash_data(view)


def view_key(view: dict) -> tuple:
    """What a run view takes beside its result's own part (views.run_view: `result_view`, a function of the
    result.json's bytes): its addresses, whether it was imported, its annotation's verdict and its cell's mark."""
    return (view["url"], view["agent_url"], view["problem_url"], view["imported"], view["verdict"],
            view["unaudited"])


def _kept_run_view(kept_plan, record: RunRecord, dataset: Dataset, shown: dict) -> tuple[dict, str]:
    """`_run_view`, its digest taken from the previous build's plan when the run's result.json has the bytes (by
    their hash) and its view the key (`view_key`) that plan kept: the view is then the very one whose digest it
    kept, the code that made both being the same (KeptRunPages' condition)."""
    view = views.run_view(record, dataset, shown)
    entry = kept_plan.run_if_kept(record.run_id)
    if (entry is not None and record.compact is not None and entry[0] == record.compact.digest.hex()
            and tuple(entry[5]) == view_key(view)):
        return view, entry[1]
    return view, hash_data(view)


def claim_addresses(dataset: Dataset) -> list[Diagnostic]:
    """Give every run, agent, problem and writeup its own address before any link is made (`urls.claim`), and
    report each name that asked for another's address or reads the same as another."""
    urls.forget_claims()
    runs = sorted(dataset.runs.values(), key=lambda r: r.run_id)
    where: dict[tuple[str, str], Path] = {}
    for record in runs:
        for kind, name in (("run", record.run_id), ("agent", record.facts.agent),
                           (_problem_kind(record.facts.deck), record.facts.problem)):
            where.setdefault((kind, name), record.result_path)
    for problem, problem_record in dataset.problems.items():
        where.setdefault(("problem", problem), problem_record.problem.spec_file)
    for writeup in dataset.writeups:
        where[("writeup", writeup.slug)] = writeup.path
    clashes = urls.claim("run", [r.run_id for r in runs], reserved=("index.html",))
    clashes += urls.claim("agent", [r.facts.agent for r in runs], reserved=("index",))
    clashes += urls.claim("writeup", [w.slug for w in dataset.writeups], reserved=("index",))
    problem_kinds = sorted({kind for kind, _ in where if kind.startswith("problem")})
    for kind in problem_kinds:
        clashes += urls.claim(kind, [name for k, name in where if k == kind],
                              reserved=("index",) if kind == "problem" else ())
    return [_clash_diagnostic(clash, where.get((clash.kind, clash.name))) for clash in clashes]


def claim_board_addresses(boards: list[Board], dataset: Dataset) -> list[Diagnostic]:
    """Every board page and diff page its own address (see urls.BOARD_PAGES), each clash reported at a result.json
    of the board that moved."""
    identities = [urls.board_identity(page, b.deck, b.gpu) for b in boards for page in ("board", "diff")]
    clashes = urls.claim(urls.BOARD_PAGES, identities, wants=urls.board_address)
    return [_board_clash_diagnostic(clash, dataset) for clash in clashes]


def _board_clash_diagnostic(clash: urls.Clash, dataset: Dataset) -> Diagnostic:
    page, deck, gpu = clash.name.split("\x00")
    _, other_deck, other_gpu = clash.other.split("\x00") if "\x00" in clash.other else ("", "", clash.other)
    where = next((r.result_path for r in dataset.runs.values() if r.facts.deck == deck and r.facts.gpu == gpu),
                 None)
    what = f"the {'diff page' if page == 'diff' else 'board'} of GPU '{gpu}' on deck '{deck}'"
    other = f"that of GPU '{other_gpu}' on deck '{other_deck}'" if other_deck else clash.other
    if clash.moved_to is None:
        message = f"{what} reads the same as {other}; each is published at its own address"
    else:
        message = (f"{what} would be published at 'boards/{clash.address}.html', the address of {other}; it is "
                   f"published at 'boards/{clash.moved_to}.html' instead")
    return Diagnostic(path=where, message=message, severity="warning",
                      hint="name the GPU in result.json by its profile key (h100_sxm, h200, ...), not a board's name")


def _problem_kind(deck: str) -> str:
    return "problem" if deck == MAIN_DECK else f"problem:{deck}"


def _clash_diagnostic(clash: urls.Clash, path: Path | None) -> Diagnostic:
    kind = clash.kind.split(":")[0]
    if clash.moved_to is None:
        message = (f"{kind} '{clash.name}' reads the same as {kind} '{clash.other}' (they differ only in letter "
                   "case, Unicode form or invisible characters); each is published at its own address")
    else:
        message = (f"{kind} '{clash.name}' would be published at '{clash.address}', the address of "
                   f"{kind} '{clash.other}'; it is published at "
                   f"'{clash.moved_to}' instead")
    return Diagnostic(path=path, message=message, severity="warning",
                      hint=f"give each {kind} a name of its own, one that no other {kind} has or reads as")


def _static(inputs: dict):
    return lambda page, extra: inputs


# ------------------------------------------------------------------------------------------------ leaderboard


def board_order(board: Board, scripted: set[str]) -> tuple:
    """The front page leads with the board where most real models ran (a first reader came to see models, not the
    scripted lines); among boards equal in that, our own deck's, then the one with the most trials."""
    real_cells = sum(1 for cell in board.cells if cell.agent not in scripted)
    return (-real_cells, board.deck != MAIN_DECK, -sum(cell.n_trials for cell in board.cells))


def leaderboard_pages(data: SiteData) -> list[Page]:
    diagnostics = [data.shown_diagnostic(d) for d in data.dataset.diagnostics]
    boards = sorted(data.boards, key=lambda b: board_order(b, data.scripted))
    switcher = [
        {"gpu": b.gpu, "label": b.title, "url": urls.board_url(b.deck, b.gpu, i == 0)}
        for i, b in enumerate(boards)
    ]
    if not boards:
        inputs: dict[str, object] = {"board": None, "boards": [], "diagnostics": diagnostics, "charts": {}}
        return [Page(urls.LEADERBOARD, "leaderboard.html", "Leaderboard", inputs, context=_static(inputs))]
    return [_board_page(data, board, i == 0, switcher, diagnostics) for i, board in enumerate(boards)]


def _board_page(
    data: SiteData, board: Board, primary: bool, switcher: list[dict], diagnostics: list[str]
) -> Page:
    from kernelbench.sitegen import charts

    rows = views.board_rows(board, data.scripted)
    runs = data.runs_of(gpu=board.gpu, deck=board.deck)
    view = {
        "gpu": board.gpu,
        "gpu_name": board.gpu_name or board.gpu,
        "deck": board.deck,
        "title": board.title,
        "diff_url": urls.diff_url(board.deck, board.gpu) if any(r["provenance"] for r in runs) else None,
        "problems": [{"id": p, "url": urls.problem_url(p, board.deck)} for p in board.problems],
        "rows": rows,
        "scripted_agents": sorted(a.agent for a in board.agents if a.agent in data.scripted),
        "imported": bool(runs) and all(r["imported"] for r in runs),
    }
    efficiency = [_efficiency_point(r) for r in runs]
    inputs = {
        "board": view,
        "boards": switcher,
        "diagnostics": diagnostics,
        "derived": board.model_dump(mode="json"),
        "efficiency": efficiency,
    }

    def context(page: Page, extra: dict) -> dict:
        figures = {
            "heatmap": charts.heatmap(rows, list(board.problems), page.href),
            "passes": charts.pass_counts(board),
            "ceilings": charts.ceilings(board),
            "fastp": charts.fast_p(board),
            "efficiency": charts.efficiency(efficiency, page.href),
        }
        return {"board": view, "boards": switcher, "diagnostics": diagnostics, "charts": figures}

    title = f"Leaderboard — {board.title}"
    return Page(
        urls.board_url(board.deck, board.gpu, primary),
        "leaderboard.html",
        title,
        inputs,
        context=context,
        kind="leaderboard",
    )


def _efficiency_point(run: dict) -> dict:
    keys = (
        "run_id",
        "url",
        "agent",
        "problem",
        "status",
        "peak_fraction",
        "tokens_total",
        "cost_usd",
        "elapsed_s",
    )
    return {k: run[k] for k in keys}


# ------------------------------------------------------------------------------------------------ runs table


def runs_index_page(data: SiteData) -> Page:
    runs = list(data.runs.values())
    filters = {key: sorted({r[key] for r in runs}) for key in ("status", "problem", "agent", "gpu")}
    inputs = {"runs": runs, "filters": filters}
    return Page(urls.RUNS_INDEX, "runs.html", "All runs", inputs, context=_static(inputs), kind="index",
                hashed=data.hashed(inputs))


# ------------------------------------------------------------------------------------------------ agents


def agent_pages(data: SiteData) -> list[Page]:
    by_agent: dict[str, list[dict]] = defaultdict(list)
    for run in data.runs.values():
        by_agent[run["agent"]].append(run)
    cells = defaultdict(list)
    for board in data.boards:
        for cell in board.cells:
            cells[cell.agent].append(views.cell_view(cell))
    summaries, pages = [], []
    for agent, runs in sorted(by_agent.items()):
        first = runs[0]
        view = {
            "agent": agent,
            "url": urls.agent_url(agent),
            "harness": first["harness"],
            "model": first["model"],
            "effort": first["effort"],
            "scripted": agent in data.scripted,
            "runs": len(runs),
            "passes": sum(c["counts"] for c in cells[agent]),
            "cells": cells[agent],
        }
        summaries.append({k: v for k, v in view.items() if k != "cells"})
        inputs = {"agent": view, "runs": runs}
        pages.append(Page(view["url"], "agent.html", agent, inputs, context=_static(inputs), kind="agent",
                          hashed=data.hashed(inputs)))
    inputs = {"agents": summaries}
    return [
        Page(urls.AGENTS_INDEX, "agents.html", "Agents", inputs, context=_static(inputs), kind="index"),
        *pages,
    ]


# ------------------------------------------------------------------------------------------------ audits


AUDITED_VERDICTS = ("rubric_leak", "reward_hack")  # the verdicts the audits page lists, with their summaries


def audits_page(data: SiteData) -> Page:
    groups: dict[str, list[dict]] = {**{verdict: [] for verdict in AUDITED_VERDICTS}, "invalid": []}
    for run_id, run in data.runs.items():
        annotation = data.dataset.annotation_for(run_id)
        item = {k: run[k] for k in ("run_id", "url", "agent", "problem", "status", "peak_fraction")}
        if annotation and annotation.verdict.value in groups:
            groups[annotation.verdict.value].append({**item, "why": annotation.summary})
        if run["status"] == "INVALID":
            why = "; ".join(
                f"class {f['klass']}: {f['message']}" for f in run["findings"] if f["severity"] == "error"
            )
            groups["invalid"].append({**item, "why": why or "; ".join(run["reasons"])})
    writeups = [
        {"title": w.meta.title, "url": urls.writeup_url(w.slug)}
        for w in data.dataset.writeups
        if w.meta.verdict.value in ("rubric_leak", "reward_hack")
    ]
    inputs = {
        "groups": [
            {"title": "Rubric leaks", "entries": groups["rubric_leak"]},
            {"title": "Reward hacks", "entries": groups["reward_hack"]},
            {"title": "Caught by the grader (INVALID)", "entries": groups["invalid"]},
        ],
        "writeups": writeups,
    }
    return Page(
        urls.AUDITS,
        "audits.html",
        "Rubric leaks and reward hacks",
        inputs,
        context=_static(inputs),
        kind="index",
    )


# ------------------------------------------------------------------------------------------------ run pages


def run_pages(data: SiteData, hasher: FileHasher, memo: PlanMemo | None = None,
              kept: KeptRunPages | None = None) -> list[Page]:
    if kept is None:
        return [run_page(data, record, hasher, memo) for _, record in sorted(data.dataset.runs.items())]
    return [kept.page(data, record, hasher) or run_page(data, record, hasher, memo)
            for _, record in sorted(data.dataset.runs.items())]


def run_page(data: SiteData, record: RunRecord, hasher: FileHasher, memo: PlanMemo | None = None) -> Page:
    view = data.runs[record.run_id]
    annotation_record = data.dataset.annotations.get(record.run_id)
    if memo is not None:
        kept = memo.run_page(record, annotation_record, view, data.viewer_version, hasher)
        if kept is not None:
            return kept
    annotation = views.annotation_view(annotation_record, data.shown_path)
    # only files the input policy lets the page show are hashed (and so read); those no build recorded before are
    # hashed where the page is rendered (see _files_of_page)
    transcript, transcript_status = (None, None) if record.imported else _shown_with_status(record,
                                                                                          transcript_name(record))
    files, later, keys = _files_of_page(hasher, record, transcript, transcript_status)
    inputs = {"run": view, "annotation": annotation, "files": files, "viewer": data.viewer_version}
    sources = tuple(
        data.shown_path(p) for p in (record.result_path, annotation_record.path if annotation_record else None) if p
    )
    work = RunPageWork(record, view, annotation, files, transcript, data.viewer_version, later, hasher)
    page = Page(
        urls.run_url(record.run_id),
        "run.html",
        record.run_id,
        inputs,
        sources=sources,
        context=work.context,
        kind="run",
        parallel=True,
        settle=work.settle if later else None,
        hashed=data.hashed(inputs),
    )
    if memo is not None:
        memo.keep_page(record, annotation_record, view, data.viewer_version, page, keys)
    return page


RUN_PAGE_FILES = ("solution.py", "check.log", "benchmark.log", "result.json")


def _files_of_page(hasher: FileHasher, record: RunRecord, transcript: str | None,
                   transcript_status: os.stat_result | NotPlain | None = None):
    """The hashes of the files a run page shows (its inputs' "files"), the files left for its `settle` (key in
    files -> (file name, where it is shown); empty when none), and where each file is shown.

    A file the previous build recorded nothing of (a first build, a new run) leaves its page no previous record
    to match: the page is rendered whatever the file's hash, and the worker that renders it reads the file
    anyway. Such files are hashed there (`RunPageWork.settle`), not here: planning a new deck would otherwise read
    every run's files twice, the first time in the one process that plans. Each file's status is taken once, for
    where it is shown and for whether the previous build's hash of it holds (`transcript_status`: the
    transcript's, taken with `transcript`)."""
    names = {name: name for name in RUN_PAGE_FILES}
    if not record.imported:
        names["transcript"] = transcript_name(record)
    files: dict[str, str | None] = {"transcript": None}
    later: dict[str, tuple[str, str]] = {}  # key in files -> (file name, where it is shown)
    keys: list[str] = []  # where each file is shown: what its hash is recorded under
    for key, name in names.items():
        if key == "transcript":
            shown, status = transcript, transcript_status
        else:
            shown, status = _shown_with_status(record, name)
        files[key] = None
        if shown is not None:
            keys.append(shown)
        if shown is not None and hasher.never_hashed(shown):
            later[key] = (name, shown)
        elif shown is not None:
            files[key] = _hash_run_file(hasher, record, name, status)
    return files, later, keys


class RunPageWork:
    """What rendering a run page takes (its `context`, and its `settle` when files are left to hash there), in a form
    that can be sent to a render worker started before the deck was loaded (pipeline.RenderPool): pickled, the run
    record travels without its opened folder, a descriptor of the building process, and the worker opens the
    folder again and takes it only when it is the very folder the build opened (`attach_folder`,
    inputs.Folder.reopen); otherwise the page is rendered by the build itself. The file hasher stays behind too:
    the files a worker settles were never hashed before, and a fresh hasher hashes them as the build's would."""

    def __init__(self, record: RunRecord, view: dict, annotation: dict | None, files: dict, transcript: str | None,
                 viewer_version: str, later: dict[str, tuple[str, str]], hasher: FileHasher | None):
        self.record, self.view, self.annotation, self.files = record, view, annotation, files
        self.transcript, self.viewer_version, self.later, self.hasher = transcript, viewer_version, later, hasher
        self.sent_folder: tuple[str, str, tuple[int, int]] | None = None
        self.transcript_read: bytes | None = None  # the transcript's bytes `settle` hashed, for its parser

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        folder = self.record.folder
        state["sent_folder"] = (str(folder.path), folder.real_text, folder.identity)
        compact = self.record.compact
        state["record"] = dataclasses.replace(self.record, opened=None,
                                              compact=None if compact is None else compact.for_page())
        state["hasher"] = None
        return state

    def attach_folder(self) -> bool:
        """In a render worker: the run folder opened again, when it is the one the build opened (see the class)."""
        if self.sent_folder is None:
            return True
        path, real, identity = self.sent_folder
        folder = Folder.reopen(Path(path), real, identity)
        if folder is None:
            return False
        self.record.opened, self.sent_folder = folder, None
        return True

    def context(self, page: Page, extra: dict) -> dict:
        record, files = self.record, self.files
        run_dir = Path(extra["staging"]) / urls.run_dir(record.run_id)
        shown = _copy_annotation(self.annotation)
        quote_excerpts(shown)
        prefix = page.href("static") + "/"
        reuse = ViewerReuse(
            viewer_cache_file(extra["staging"], urls.slug_of("run", record.run_id)),
            hash_data([files["transcript"], str(self.transcript), self.viewer_version, prefix, _budget(record)]),
        )
        read, self.transcript_read = self.transcript_read, None  # (not kept with the plan)
        tabs, transcript_info = run_tabs(record, shown, run_dir, prefix, extra["diagnostics_out"], reuse, read)
        return {"run": self.view, "annotation": shown, "tabs": tabs, "transcript": transcript_info}

    def settle(self) -> dict[str, list]:
        """Hash the files left for the render, through the run folder's descriptor as planning would have, into
        the page's inputs; their signature entries go back to the build's manifest. The transcript is read once:
        the bytes hashed here are those its parser reads (`transcript_read`)."""
        if self.hasher is None:
            self.hasher = FileHasher()
        entries = {}
        for key, (name, shown) in self.later.items():
            if key == "transcript":
                self.files[key], self.transcript_read = _read_run_file(self.hasher, self.record, name,
                                                                       TRANSCRIPT_READ_ONCE)
            else:
                self.files[key] = _hash_run_file(self.hasher, self.record, name)
            entry = self.hasher.entry(shown)
            if entry is not None:
                entries[shown] = entry
        return entries


def _shown_run_file(record: RunRecord, name: str) -> str | None:
    """Where a run's file is shown (`str(record.file(name))`), without resolving a plain file name again."""
    return _shown_with_status(record, name)[0]


def _shown_with_status(record: RunRecord, name: str) -> tuple[str | None, os.stat_result | NotPlain | None]:
    """`_shown_run_file`, and the file's status as `inputs.Folder.plain_status` took it to decide that."""
    status = record.folder.plain_status(name)
    if status is None:
        return None, None
    if not isinstance(status, NotPlain) and stat.S_ISREG(status.st_mode):
        return record.folder.plain_shown(name), status
    found = record.file(name)
    return (None if found is None else str(found)), status


def _hash_run_file(hasher: FileHasher, record: RunRecord, name: str,
                   status: os.stat_result | NotPlain | None = None) -> str | None:
    """The hash of a run's file as read through its folder's descriptor (the bytes its page will show); a file
    whose status through that descriptor is the one the previous build hashed is not opened. `status`: the file's
    `plain_status`, when the caller has just taken it."""
    known = hasher.unchanged_in(record.folder, name, status)
    if not isinstance(known, Unknown):
        return known
    return hasher(record.file(name), lambda: record.folder.open_file(name))


# a transcript up to this size is read once, hashed and parsed from the same bytes; a larger one is hashed as it
# is read and parsed as the parser reads it (its bytes would otherwise be held whole beside what the parser makes)
TRANSCRIPT_READ_ONCE = 32 << 20


def _read_run_file(hasher: FileHasher, record: RunRecord, name: str, cap: int) -> tuple[str | None, bytes | None]:
    """`_hash_run_file` of a file no build hashed before, and its bytes as read through the folder's descriptor
    and hashed (None when it was not read whole: see `FileHasher.read`)."""
    return hasher.read(record.file(name), lambda: record.folder.open_file(name), cap)


def _budget(record: RunRecord) -> float | None:
    return record.facts.budget_s


def _copy_annotation(annotation: dict | None) -> dict | None:
    if annotation is None:
        return None
    return {**annotation, "quotes": [dict(q) for q in annotation["quotes"]]}


def viewer_version() -> str:
    """Changes when the transcript viewer appears or changes, so run pages are rendered again."""
    try:
        from kernelbench.transcripts import viewer
    except ImportError:
        return "raw"
    return "viewer-" + code_hash(Path(viewer.__file__).parent)
