"""What a build keeps of its plan for the next command, and the rebuild that allows: one that reads again only the
files an edit touched and plans again only the pages they reach.

A build that plans the whole deck (plan.plan_site) keeps, beside its file-system record (snapshot.py), what a later
command needs to know that an edit stays inside run pages (`KeptPlan`): for each run that loaded, the hash of its
result.json bytes, the digest of its run view (and the "unaudited" mark its board cell gave it) and what the other
pages take of its result beside that view (plan.shared_of_result); for each
annotation file, the run it names, its verdict, the hash of its summary and what its load reported; the addresses
handed out (urls.claim) and what planning reported. Every page, in order, is in the record's outcome already.

The next command compares its file-system record with the kept one (snapshot.edited_names). When the only changes
are files inside run folders that were there before and annotation files that were there before (`edit_of`), it
loads only those runs and the annotations naming them, through the same input door as a full load
(results.dataset.load_some), and checks that nothing another page shows has moved (`plan_pages`): each run's
result.json gives the same run view and the same of what other pages take of it, each annotation names the same run,
keeps its verdict
(and its summary, where the audits page shows it) and reports the same diagnostics. Then every page but those runs'
is the one in place (its record in the manifest, its file linked from the previous site) and only those runs' pages
are planned, and rendered if their fingerprints moved. Anything else, and any check that fails, is left to the full
build, which plans the whole deck.

Every run or annotation not named changed is, by its record, the same file system entry, down to its ctime, as when
the previous build read it, and changed last well before that build began: what that build derived from it stands.
"""

from __future__ import annotations

import hashlib
import marshal
import types
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelbench.errors import Diagnostic
from kernelbench.sitegen import snapshot
from kernelbench.sitegen.buildcache import CACHE_DIR

PLAN_FILE = "plan.marshal"  # in the build cache folder of the site, beside snapshot.SNAPSHOT_FILE
PLAN_VERSION = 4  # 4: each run's entry holds its run view's key (plan.view_key); 3: what other pages take of its result
MAX_EDITED = 64  # run folders and annotation files changed, past which a rebuild plans the whole deck
ANNOTATION_SUFFIXES = (".yaml", ".yml")  # the files of annotations/ a load reads (results.dataset)


def plan_path(site_dir: Path) -> Path:
    return Path(site_dir) / CACHE_DIR / PLAN_FILE


def diagnostic_row(diag: Diagnostic) -> tuple:
    """A diagnostic as the build's records keep it (snapshot.Outcome)."""
    return (None if diag.path is None else str(diag.path), diag.message, diag.line, diag.hint, diag.severity)


@dataclass
class KeptPlan:
    """What a build kept of its plan (see the module's docstring). Kept with marshal, as the file-system record is,
    each run's and annotation's entry as its own marshalled bytes: a rebuild decodes only those of the runs an edit
    touched (at ten thousand runs, decoding every entry costs more than the rest of the file)."""

    taken_ns: int  # the file-system record this plan goes with (snapshot.Snapshot.taken_ns)
    viewer: str  # the transcript viewer's version the run pages were planned with
    claims: dict[str, dict[str, str]]  # the addresses handed out (urls.claims), a run's only when not its own slug
    diagnostics: list[tuple]  # what planning reported (diagnostic_row), in order
    # run folder name (the run id) -> (result.json hash, run view digest, its "unaudited" mark, the annotation
    # files naming the run, what other pages take of its result: plan.shared_of_result, what its run view takes
    # beside its result: plan.view_key), marshalled
    runs: dict[str, bytes] = field(default_factory=dict)
    # annotation file name -> (the run it names, verdict, summary hash, what its load reported, whether it is the
    # run's annotation), marshalled; a file that did not load: (None, None, None, reported, False)
    annotations: dict[str, bytes] = field(default_factory=dict)
    _decoded: dict[str, tuple] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of_build(cls, site, taken_ns: int, claims: dict[str, dict[str, str]]) -> KeptPlan:
        """The plan of a full build (`site`: plan.SitePlan)."""
        from kernelbench.sitegen.plan import shared_of_result, view_key

        data = site.data
        dataset = data.dataset
        naming: dict[str, list[str]] = defaultdict(list)
        for path, run_id in dataset.annotation_run_ids.items():
            naming[run_id].append(Path(path).name)
        records = {str(record.path): record for record in dataset.annotations.values()}
        annotations = {Path(path).name: marshal.dumps(annotation_entry(records.get(path), reported))
                       for path, reported in dataset.annotation_reports.items()}
        runs = {}
        for run_id, record in dataset.runs.items():
            digest = dataset.result_digests.get(str(record.result_path))
            if digest is None or record.path.name != run_id:  # a change to this run is left to a full build
                continue
            view = data.runs[run_id]
            runs[run_id] = marshal.dumps((digest, data.view_digests[id(view)], bool(view["unaudited"]),
                                          tuple(sorted(naming.get(run_id, ()))), shared_of_result(record, digest),
                                          view_key(view)))
        return cls(taken_ns=taken_ns, viewer=data.viewer_version, claims=claims,
                   diagnostics=[diagnostic_row(d) for d in site.diagnostics], runs=runs, annotations=annotations)

    def run(self, name: str) -> tuple:
        """A run's entry (see `runs`), decoded once."""
        found = self._decoded.get(name)
        if found is None:
            found = self._decoded[name] = marshal.loads(self.runs[name])
        return found

    def run_if_kept(self, name: str) -> tuple | None:
        return self.run(name) if name in self.runs else None

    def annotation(self, name: str) -> tuple:
        return marshal.loads(self.annotations[name])

    def save(self, site_dir: Path) -> None:
        """Write the plan into the staging folder (swapped in whole with the site: no atomic write needed)."""
        path = plan_path(site_dir)
        blob = marshal.dumps({"version": PLAN_VERSION, "taken_ns": self.taken_ns, "viewer": self.viewer,
                              "claims": self.claims, "diagnostics": self.diagnostics, "runs": self.runs,
                              "annotations": self.annotations})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a hard link into the previous site: replace it, never write through it
        path.write_bytes(blob)

    @classmethod
    def load(cls, site_dir: Path) -> KeptPlan | None:
        """The plan kept in a site; None when there is none or it cannot be read (the build plans in full)."""
        try:
            saved = marshal.loads(plan_path(site_dir).read_bytes())  # the build's own output, never an input
            if saved["version"] != PLAN_VERSION:
                return None
            return cls(saved["taken_ns"], saved["viewer"], saved["claims"], saved["diagnostics"], saved["runs"],
                       saved["annotations"])
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            return None


def annotation_entry(record, reported: list[Diagnostic]) -> tuple:
    """What a plan keeps of one annotation file (`record`: its AnnotationRecord when it is its run's annotation)."""
    rows = tuple(diagnostic_row(d) for d in reported)
    if record is None:
        return (None, None, None, rows, False)
    annotation = record.annotation
    summary = hashlib.blake2b(annotation.summary.encode(), digest_size=16).hexdigest()
    return (record.run_id, annotation.verdict.value, summary, rows, True)


def _same_for_other_pages(kept: tuple, now: tuple) -> bool:
    """Whether an annotation's new load leaves every page but its run's as it was: the same run, verdict and report
    (the leaderboards list every diagnostic), and the same summary where the audits page shows it."""
    from kernelbench.sitegen.plan import AUDITED_VERDICTS

    run_id, verdict, summary, reported, taken = now
    if not taken or (run_id, verdict, reported) != (kept[0], kept[1], kept[3]):
        return False
    return verdict not in AUDITED_VERDICTS or summary == kept[2]


@dataclass
class Edit:
    """An edit a rebuild may plan by itself: the run folders to load (by name, which is the run id) and the annotation
    files to load (those edited and those naming an edited run, whose quotes are checked against its files)."""

    plan: KeptPlan
    runs: set[str]
    annotations: set[str]
    pages: list[str]  # every page of the site in place, in plan order (from its record: snapshot.Outcome)


def edit_of(config, site_dir: Path, kept: tuple | None, now: snapshot.Snapshot,
            plan_of: Callable[[Path], KeptPlan | None] | None = None) -> Edit | None:
    """The edit between the site in place (its file-system record `kept` and its plan) and the inputs now, when it
    lies inside run folders and annotation files that were there before; None when a full build is needed.
    `plan_of`: what reads the site's plan (default `KeptPlan.load`)."""
    if kept is None:
        return None
    before, outcome = kept
    data = Path(config.data_dir)
    names = snapshot.edited_names(before, now, str(data / "runs"), str(data / "annotations"))
    if names is None:
        return None
    plan = (plan_of or KeptPlan.load)(site_dir)
    if plan is None or plan.taken_ns != before.taken_ns:
        return None
    edited_runs, edited_files = names
    if len(edited_runs) + len(edited_files) > MAX_EDITED:
        return None  # more a new deck than an edit: the full build renders in parallel
    annotations = {name for name in edited_files if name.endswith(ANNOTATION_SUFFIXES)}
    if any(name not in plan.runs for name in edited_runs):  # a run folder that did not load, or not by its status
        return None
    if any(name not in plan.annotations or not plan.annotation(name)[4] for name in annotations):
        return None  # an annotation that did not load, or a run's second one
    runs = set(edited_runs) | {plan.annotation(name)[0] for name in annotations} & plan.runs.keys()
    for name in runs:
        naming = plan.run(name)[3]
        if len(naming) > 1:  # two annotations name the run: which one it takes is the full build's to decide
            return None
        annotations.update(naming)
    if not snapshot.site_holds(now, site_dir, outcome.files):
        return None  # a page or asset of the site in place is gone: the full build writes it again
    return Edit(plan=plan, runs=runs, annotations=annotations, pages=outcome.files[1:1 + outcome.pages])


def plan_pages(config, edit: Edit, hasher):
    """The pages of the edited runs, planned as a full build plans them, and the dataset they were loaded into; None
    when the edit reaches another page (a result.json that gives another run view or changes what other pages take
    of it, a verdict, a diagnostic...). The addresses handed out are the previous build's (the names are the
    same)."""
    from kernelbench.results.dataset import load_some
    from kernelbench.sitegen import plan as planning
    from kernelbench.sitegen import urls, views
    from kernelbench.sitegen.manifest import hash_data

    kept = edit.plan
    dataset = load_some(Path(config.data_dir), config.resolved_problems_dir(), edit.runs, edit.annotations)
    reported = sum((len(rows) for rows in dataset.annotation_reports.values()), 0)
    if len(dataset.runs) != len(edit.runs) or len(dataset.diagnostics) != reported:
        return None  # a run that no longer loads, or one whose load reports something
    if len(dataset.annotation_reports) != len(edit.annotations):
        return None
    records = {str(record.path): record for record in dataset.annotations.values()}
    now = {Path(path).name: annotation_entry(records.get(path), rows)
           for path, rows in dataset.annotation_reports.items()}
    if any(not _same_for_other_pages(kept.annotation(name), entry) for name, entry in now.items()):
        return None
    urls.restore_claims(kept.claims)
    data = planning.SiteData(dataset=dataset, boards=[], runs={}, viewer_version=kept.viewer)
    pages, runs = [], {}
    for name in sorted(edit.runs):
        run_id = name
        _, view_digest, unaudited, naming, shared, _ = kept.run(name)
        record = dataset.runs.get(run_id)
        digest = None if record is None else dataset.result_digests.get(str(record.result_path))
        if record is None or record.path.name != name or digest is None:
            return None
        if planning.shared_of_result(record, digest) != shared:
            return None  # the boards, problem or diff pages take what changed
        view = views.run_view(record, dataset, {run_id: types.SimpleNamespace(unaudited=unaudited)})
        if hash_data(view) != view_digest:
            return None
        data.runs[run_id] = view
        data.view_digests[id(view)] = view_digest
        pages.append(planning.run_page(data, record, hasher))
        runs[name] = marshal.dumps((digest, view_digest, unaudited, naming, shared, planning.view_key(view)))
    kept.runs.update(runs)
    kept._decoded.clear()
    kept.annotations.update({name: marshal.dumps(entry) for name, entry in now.items()})
    return pages, dataset
