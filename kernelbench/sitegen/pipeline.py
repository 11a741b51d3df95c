"""The build: gather and validate everything → derive → plan pages → render what changed → swap in.

Nothing is written before every input has been read and checked, and nothing is written outside the staging
folder until the final swap; runs/ and annotations/ are only ever read.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import html
import os
import signal
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.sitegen import snapshot
from kernelbench.sitegen.assets import asset_sources, copy_assets
from kernelbench.sitegen.buildcache import (
    CACHE_DIR,
    WarmState,
    cache_version,
    load_parse_cache,
    save_parse_cache,
    viewer_cache_file,
)
from kernelbench.sitegen.manifest import (
    LEGACY_MANIFEST_NAMES,
    MANIFEST_NAME,
    FileHasher,
    FileRecords,
    Manifest,
)
from kernelbench.sitegen.pages import Page

# A rebuild whose inputs did not change ends after looking at them (snapshot.py), in a fraction of a second: what
# only loading, rendering and writing need (jinja2, the data models, the worker pool, YAML, the output folder's
# records and with them pydantic) is imported when a build gets that far, or, where a forked process takes the
# file-system record of a large deck, while it does (`_edit_imports`).
REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(__file__).resolve().parents[1]
PARALLEL_THRESHOLD = 8  # below this many heavy pages a worker pool costs more than it saves
MAX_CHUNK = 16  # pages handed to a render worker at once
PROGRESS_PAGES = 50  # fewer pages to render than this: no progress bar


@dataclass
class BuildConfig:
    data_dir: Path = REPO
    out_dir: Path = REPO / "site"
    problems_dir: Path | None = None
    templates_dir: Path = REPO / "templates"
    static_dir: Path = REPO / "static"
    strict: bool = False
    jobs: int = field(default_factory=lambda: max(1, len(os.sched_getaffinity(0))))
    progress: bool = False

    def resolved_problems_dir(self) -> Path | None:
        if self.problems_dir:
            return self.problems_dir
        candidate = Path(self.data_dir) / "problems"
        return candidate if candidate.is_dir() else None


@dataclass
class BuildReport:
    diagnostics: list[Diagnostic]
    pages: int
    rendered: int
    seconds: float
    out_dir: Path
    assets_copied: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    cpu_s: float = 0.0  # CPU time of the building process (render workers not included)

    @property
    def changed(self) -> bool:
        """Whether any page or asset differs from the previous site (the dev server reloads only then)."""
        return bool(self.rendered or self.assets_copied)

    @property
    def failed_strict(self) -> bool:
        return bool(self.diagnostics)


def build_site(config: BuildConfig, warm: WarmState | None = None, held: list | None = None) -> BuildReport:
    """Build the whole site into `config.out_dir`; the previous site stays in place until the very end.

    `warm` (the dev server's) carries parsed inputs and compiled templates from the previous rebuild; without
    it the parsed inputs come from the previous build's cache in the output folder. `held`: a list the build
    appends what it loaded and planned to, rather than freeing it as it returns, for a process that ends right
    after (main.command).
    """
    out_dir = Path(os.path.realpath(config.out_dir))
    refuse_output_inside_inputs(config, out_dir)
    with _site_umask():
        return _build(config, out_dir, warm, held)


@contextlib.contextmanager
def _site_umask():
    """A site is published: its folders 0755 and files 0644 whatever the caller's umask (a umask of 077 would
    leave it unreadable to a web server running as another user)."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _build(config: BuildConfig, out_dir: Path, warm: WarmState | None, held: list | None = None) -> BuildReport:
    clock = Stopwatch()
    kept = snapshot.load(snapshot_path(out_dir))
    inputs_now = snapshot.take(*snapshot.input_roots(config), snapshot.build_context(config),
                               previous=kept[0] if kept else None, meanwhile=_edit_imports if kept else None,
                               site_files=(out_dir, kept[1].files) if kept else None)
    unchanged = snapshot.unchanged_outcome(out_dir, kept, inputs_now)
    clock.lap("look at the inputs")
    if unchanged is not None:
        return _unchanged_report(unchanged, out_dir, clock)
    previous = _Previous(out_dir)
    report = _edit_build(config, out_dir, kept, inputs_now, clock, warm, previous)
    if report is not None:
        return report
    # a build that will render most pages starts its render workers now, before the deck is loaded and planned:
    # forked from a process that holds the code and little else, none of them counts the deck's memory again
    # (RenderPool); another starts them when it has pages enough to render (a result edited: five)
    pool = RenderPool.start(config.jobs) if warm is None and _renders_most_pages(config, kept, inputs_now) else None
    try:
        return _full_build(config, out_dir, inputs_now, clock, warm, pool, kept, held, previous)
    finally:
        if pool is not None:
            pool.close()


def _edit_imports() -> None:
    """What a rebuild after an edit imports (the data models with pydantic, YAML, jinja2, pygments: about a fifth
    of a second at ten thousand runs' deck), imported while a forked process records the inputs (snapshot.take):
    with a core free, a rebuild after an edit no longer waits for them, and one whose inputs did not change takes
    about as long as before, spending their CPU time beside the child's walk (with the other core busy, about that
    much longer)."""
    from kernelbench.base.models import Ceiling, Tokens
    from kernelbench.results import dataset  # noqa: F401
    from kernelbench.results.run import RunResult
    from kernelbench.sitegen import keptplan, output, plan, render, runpage  # noqa: F401

    # the validator of a run's result and the serializers of the parts a run view dumps, built when first used
    # otherwise (base.models.Model: defer_build): 50-60 ms of a rebuild that loads a run
    for model in (RunResult, Tokens, Ceiling):
        model.model_rebuild()


def _renders_most_pages(config: BuildConfig, kept, now: snapshot.Snapshot) -> bool:
    """Whether this build is expected to render most of its pages: no site is in place (nor its record), or the
    code, templates or assets changed since it was built (every page's fingerprint takes them). A guess that
    decides only when the render workers start: wrong either way, it costs memory, never a page."""
    return kept is None or snapshot.code_changed(kept[0], now, snapshot.input_roots(config))


def _full_build(config: BuildConfig, out_dir: Path, inputs_now: snapshot.Snapshot, clock: Stopwatch,
                warm: WarmState | None, pool: RenderPool | None, kept=None, held: list | None = None,
                kept_records: _Previous | None = None) -> BuildReport:
    from kernelbench.fileio import atomic_write_bytes
    from kernelbench.sitegen import output, urls
    from kernelbench.sitegen.keptplan import KeptPlan
    from kernelbench.sitegen.plan import plan_site
    from kernelbench.sitegen.render import TABLE_ROWS_FILE, table_rows_version, templates_hash
    from kernelbench.transcripts.gcpause import gc_paused

    kept_records = kept_records or _Previous(out_dir)
    previous = kept_records.manifest()
    hasher = FileHasher(previous.file_hashes, previous.started_ns)
    staging = output.new_staging_dir(out_dir)
    seeding = None
    try:
        spare_runs = output.take_spare(out_dir, staging)
        output.claim(staging)
        seeding = output.Seeding(out_dir, staging, spare_runs)  # runs while the inputs are read
        seeded_from = output.SiteRecord.load(out_dir)
        version = cache_version()
        parse_cache = warm.parse_cache if warm else load_parse_cache(out_dir, version)
        memo = _memo(warm, previous)
        kept_inputs = (_kept_inputs(warm, config, inputs_now, parse_cache) if warm is not None
                       else _unopened_runs(config, kept, inputs_now))
        kept_pages = _kept_run_pages(config, kept_records, kept, inputs_now, previous) if warm is None else None
        with gc_paused():  # tens of thousands of long-lived objects, no cycle among them (see gcpause.py)
            site = plan_site(config, hasher, parse_cache, memo, kept_inputs, kept_pages)  # gather + validate + derive
        clock.lap("load and plan")
        tpl_hash = templates_hash(config.templates_dir)
        env = _environment(config, tpl_hash, warm, staging)
        rows, rows_version = env.globals["table_rows"], table_rows_version(tpl_hash)
        if warm is None:  # a watching build keeps its rows in its environment
            rows.load(out_dir / CACHE_DIR / TABLE_ROWS_FILE, rows_version)
        seeding.wait()
        _drop_legacy_records(staging)
        clock.lap("link previous site")
        (staging / CACHE_DIR / "jinja").mkdir(parents=True, exist_ok=True)
        manifest = Manifest(file_hashes={}, started_ns=hasher.started_ns)
        manifest.static, copied = copy_assets(
            asset_sources(config.static_dir), staging, previous.static, hasher
        )
        meanwhile = None
        if warm is None or warm.builds == 0:  # a warm process keeps it in memory; the disk copy is for commands
            meanwhile = functools.partial(save_parse_cache, parse_cache, staging, version)
        # the collector stays paused while pages are rendered too: the plan's objects (hundreds of thousands at ten
        # thousand runs) would otherwise be walked again by every full collection the rendering sets off, a second
        # or more of this process's time; what rendering leaves alive is handed to the oldest generation after
        with gc_paused():
            render_diags = render_changed_pages(site.pages, env, tpl_hash, staging, previous, manifest, config,
                                                pool, meanwhile)
        if pool is not None:  # done: their memory is not held while the build writes its records
            pool.close()
        hasher.seen.update(manifest.settled)  # files hashed where their pages were rendered
        render_diags += site.changed_inputs()
        rows.keep_only(site.data.runs if site.data is not None else {})
        if warm is None or warm.builds == 0:  # as the parse cache: the disk copy is for commands
            rows.save(staging / CACHE_DIR / TABLE_ROWS_FILE, rows_version)
        clock.lap("render")
        prune_stale_pages(staging, site.pages, previous)
        site.write_exports(staging)
        manifest.file_hashes = hasher.seen
        if kept_pages is not None and kept_pages.folders:  # the files of the run pages taken as they were
            records = previous.file_hashes
            if not isinstance(records, FileRecords):
                records = FileRecords.of(records)
            manifest.file_hashes = FileRecords.of(hasher.seen).with_folders_of(records, kept_pages.folders)
        atomic_write_bytes(staging / MANIFEST_NAME, manifest.dump())
        outcome = _outcome(site.pages, manifest, site.diagnostics + render_diags)
        snapshot.save(snapshot_path(staging), inputs_now, outcome)
        KeptPlan.of_build(site, inputs_now.taken_ns, urls.claims(own_slugs=False)).save(staging)
        output.SiteRecord.of_staging(staging, seeded_from, written_run_folders(manifest.written)).save(staging)
        output.swap_in(staging, out_dir, keep_spare=True)
        clock.lap("exports and swap")
        if warm is not None:
            warm.builds += 1
            warm.snapshot, warm.dataset, warm.manifest_started_ns = inputs_now, site.dataset, manifest.started_ns
    except BaseException:
        if seeding is not None:
            seeding.cancel()
        output.abandon(staging)
        raise
    diagnostics = site.diagnostics + render_diags
    if held is not None:
        held.append((site, parse_cache, previous, manifest, hasher, env, kept_pages, memo, kept_inputs, inputs_now,
                     kept))
    return BuildReport(
        diagnostics,
        len(site.pages),
        manifest.rendered,
        clock.total(),
        out_dir,
        assets_copied=copied,
        timings=clock.laps,
        cpu_s=time.process_time() - clock.cpu_start,
    )


def _edit_build(config: BuildConfig, out_dir: Path, kept, inputs_now: snapshot.Snapshot,
                clock: Stopwatch, warm: WarmState | None = None,
                kept_records: _Previous | None = None) -> BuildReport | None:
    """A rebuild after an edit inside run folders and annotation files that reaches no page but those runs' (see
    keptplan.py): only those runs and their annotations are read, only their pages planned, the rest of the site is
    the one in place. None, with nothing written, when the edit needs the full build.

    A watching build (`warm`) takes this path too, with its compiled templates. Its records of the previous full
    build (the file-system record and the dataset behind `_kept_inputs`, the plan memo) are left as they were: they
    are older than the site in place, so its next full build reads again every run and annotation changed since
    them, these edits included, and the pages this build wrote are in the manifest it starts from."""
    from kernelbench.sitegen import keptplan

    kept_records = kept_records or _Previous(out_dir)
    edit = keptplan.edit_of(config, out_dir, kept, inputs_now, plan_of=lambda _: kept_records.plan())
    if edit is None:
        return None
    from kernelbench.fileio import atomic_write_bytes
    from kernelbench.sitegen import output
    from kernelbench.sitegen.render import templates_hash

    previous = kept_records.manifest()
    if not all(url in previous.pages for url in edit.pages):
        return None
    clock.lap("look at the edit")
    # the previous build's time, not this one's: a signature is trusted only for a file last changed before the
    # build that hashed it began, and this build carries the others' signatures over unchecked
    hasher = FileHasher(previous.file_hashes, previous.started_ns)
    planned = keptplan.plan_pages(config, edit, hasher)
    if planned is None:
        return None
    pages, dataset = planned
    clock.lap("load and plan the edit")
    staging = output.new_staging_dir(out_dir)
    seeding = None
    try:
        spare_runs = output.take_spare(out_dir, staging)
        output.claim(staging)
        seeding = output.Seeding(out_dir, staging, spare_runs)
        seeded_from = output.SiteRecord.load(out_dir)
        tpl_hash = templates_hash(config.templates_dir)
        env = _environment(config, tpl_hash, warm, staging)
        seeding.wait()
        _drop_legacy_records(staging)
        clock.lap("link previous site")
        (staging / CACHE_DIR / "jinja").mkdir(parents=True, exist_ok=True)
        manifest = Manifest(pages=dict(previous.pages), static=previous.static, started_ns=previous.started_ns)
        render_changed_pages(pages, env, tpl_hash, staging, previous, manifest, config)
        clock.lap("render")
        manifest.file_hashes = _carried_file_hashes(previous, dataset, {**hasher.seen, **manifest.settled})
        atomic_write_bytes(staging / MANIFEST_NAME, manifest.dump())
        diagnostics = [Diagnostic(*row) for row in edit.plan.diagnostics]
        diagnostics += [_diag_from_json(d) for url in edit.pages for d in manifest.pages[url][1]]
        diagnostics += [report.diagnostic for _, record in sorted(dataset.runs.items())
                        if (report := record.folder.changed_report()) is not None]
        outcome = snapshot.Outcome(pages=len(edit.pages),
                                   diagnostics=[keptplan.diagnostic_row(d) for d in diagnostics],
                                   files=[MANIFEST_NAME, *edit.pages, *manifest.static])
        snapshot.save(snapshot_path(staging), inputs_now, outcome)
        edit.plan.taken_ns = inputs_now.taken_ns
        edit.plan.save(staging)
        output.SiteRecord.of_staging(staging, seeded_from, written_run_folders(manifest.written)).save(staging)
        output.swap_in(staging, out_dir, keep_spare=True)
        clock.lap("exports and swap")
    except BaseException:
        if seeding is not None:
            seeding.cancel()
        output.abandon(staging)
        raise
    return BuildReport(diagnostics, len(edit.pages), manifest.rendered, clock.total(), out_dir,
                       timings=clock.laps, cpu_s=time.process_time() - clock.cpu_start)


class _Previous:
    """The previous build's manifest and kept plan (keptplan.KeptPlan), each read once for a build: the edit path's
    look reads them, and the full build that follows when the edit reaches other pages reads them again. The edit
    path changes neither unless it builds the site itself (keptplan.plan_pages updates the plan only once every page
    of the edit is planned)."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self._manifest: Manifest | None = None
        self._plan = None
        self._plan_read = False

    def manifest(self) -> Manifest:
        if self._manifest is None:
            self._manifest = Manifest.load(self.out_dir)
        return self._manifest

    def plan(self):
        if not self._plan_read:
            from kernelbench.sitegen.keptplan import KeptPlan

            self._plan, self._plan_read = KeptPlan.load(self.out_dir), True
        return self._plan


def _kept_run_pages(config: BuildConfig, kept_records: _Previous, kept, now: snapshot.Snapshot, previous: Manifest):
    """The run pages this full build may take from the previous build's unplanned (plan.KeptRunPages); None when
    the previous build's records cannot vouch for any."""
    from kernelbench.sitegen.plan import KeptRunPages

    if kept is None or snapshot.code_changed(kept[0], now, snapshot.input_roots(config)):
        return None
    plan = kept_records.plan()
    if plan is None or plan.taken_ns != kept[0].taken_ns:
        return None
    runs_root, annotations_root = (str(Path(config.data_dir) / name) for name in ("runs", "annotations"))
    runs = snapshot.unchanged_names(kept[0], now, runs_root)
    if not runs:
        return None
    return KeptRunPages(plan, runs, snapshot.unchanged_names(kept[0], now, annotations_root), runs_root,
                        annotations_root, previous.pages)


def _carried_file_hashes(previous: Manifest, dataset, hashed: dict[str, list]) -> FileRecords:
    """The previous build's file signatures with those of the reloaded runs' files replaced by this build's (a file
    no longer there no longer recorded); the other folders' records are carried as they were read."""
    from kernelbench.sitegen.plan import RUN_PAGE_FILES
    from kernelbench.sitegen.runpage import transcript_name

    records = previous.file_hashes
    if not isinstance(records, FileRecords):
        records = FileRecords.of(records)
    dropped = [record.folder.plain_shown(name) for record in dataset.runs.values()
               for name in (*RUN_PAGE_FILES, transcript_name(record))]
    return records.replaced(dropped, hashed)


def _drop_legacy_records(staging: Path) -> None:
    """The manifest an earlier build wrote under another name, linked in from the site it replaces: not this
    build's record, so not left in the site it publishes."""
    for name in LEGACY_MANIFEST_NAMES:
        (staging / name).unlink(missing_ok=True)


def written_run_folders(urls_written: list[str]) -> list[str]:
    """The run folders (under runs/) of the pages a build wrote: a run page writes its chunk files beside it."""
    return sorted({url.split("/")[1] for url in urls_written if url.startswith("runs/") and url.count("/") == 2})


def _memo(warm: WarmState | None, previous: Manifest):
    """The watching process's memo of derived values (a command builds once: nothing to keep)."""
    from kernelbench.sitegen.plan import PlanMemo

    if warm is None:
        return None
    if not isinstance(warm.memo, PlanMemo):
        warm.memo = PlanMemo()
    if previous.started_ns != warm.manifest_started_ns:
        warm.memo.forget_pages()
    return warm.memo


def _kept_inputs(warm: WarmState | None, config: BuildConfig, now: snapshot.Snapshot, parse_cache):
    """The run and annotation records of the watching process's previous build whose files its file-system record
    shows unchanged since (snapshot.unchanged_names): taken unread (results.dataset.KeptInputs)."""
    from kernelbench.results.dataset import KeptInputs

    if warm is None or warm.snapshot is None or warm.dataset is None:
        return None
    before, dataset = warm.snapshot, warm.dataset
    runs_root, annotations_root = (str(Path(config.data_dir) / name) for name in ("runs", "annotations"))
    same_runs = snapshot.unchanged_names(before, now, runs_root)
    same_annotations = snapshot.unchanged_names(before, now, annotations_root)
    kept = KeptInputs()
    for record in dataset.runs.values():
        name = record.path.name
        entry = now.folders.get(f"{runs_root}/{name}")
        if (name in same_runs and str(record.path.parent) == runs_root and record.opened is not None
                and entry is not None and record.opened.identity == (entry[0][1], entry[0][2])):
            kept.runs[name] = record
    wanted = {}
    for annotation in dataset.annotations.values():
        path = annotation.path
        if path.name in same_annotations and str(path.parent) == annotations_root:
            run = dataset.runs.get(annotation.run_id) if annotation.run_known else None
            if run is None or run.path.name in kept.runs:
                wanted[str(path)] = (annotation, dataset.annotation_reports.get(str(path), []), run)
    kept.annotations = wanted
    kept.annotation_keys = {key[0]: key for key in parse_cache.used if key[0] in wanted}
    return kept


def _unopened_runs(config: BuildConfig, kept, now: snapshot.Snapshot):
    """For a command's build: the run folders its file-system record shows unchanged since the previous build's
    (snapshot.unchanged_names), each with its identity and its result.json's status as this build's record took
    them: the load takes such a run from the parse cache without opening its folder when that status is the one
    its cached value was read with (results.dataset.KeptInputs.unopened). None when there is no previous record."""
    from kernelbench.results.dataset import KeptInputs

    if kept is None:
        return None
    runs_root = str(Path(config.data_dir) / "runs")
    names = snapshot.unchanged_names(kept[0], now, runs_root)
    listed = now.folders.get(runs_root)
    if not names or listed is None:
        return None
    found = {}
    folders = snapshot.named_entries(listed)
    for name in names:
        folder = now.folders.get(f"{runs_root}/{name}")
        entry = snapshot.unpacked(folders[name])
        result = snapshot.named_entry(folder, RESULT_NAME) if folder is not None else None
        if result is None or not snapshot.is_folder(entry) or not snapshot.is_file(result):
            continue
        found[name] = ((entry[1], entry[2]), result)
    return KeptInputs(unopened=found, unopened_in=runs_root)


RESULT_NAME = "result.json"  # results.run.RESULT_FILE, without importing the data models before they are needed


def snapshot_path(site_dir: Path) -> Path:
    """Where a site keeps the record of the inputs it was built from (see snapshot.py)."""
    return Path(site_dir) / CACHE_DIR / snapshot.SNAPSHOT_FILE


def _outcome(pages: list[Page], manifest: Manifest, diagnostics: list[Diagnostic]) -> snapshot.Outcome:
    files = [MANIFEST_NAME, *(page.url for page in pages), *manifest.static]
    found = [(None if d.path is None else str(d.path), d.message, d.line, d.hint, d.severity) for d in diagnostics]
    return snapshot.Outcome(pages=len(pages), diagnostics=found, files=files)


def _unchanged_report(outcome: snapshot.Outcome, out_dir: Path, clock: Stopwatch) -> BuildReport:
    """The report of a build whose inputs are those of the site in place: that build's report, nothing rendered."""
    diagnostics = [Diagnostic(path, message, line, hint, severity)
                   for path, message, line, hint, severity in outcome.diagnostics]
    return BuildReport(diagnostics, outcome.pages, 0, clock.total(), out_dir, timings=clock.laps,
                       cpu_s=time.process_time() - clock.cpu_start)


def _environment(config: BuildConfig, tpl_hash: str, warm: WarmState | None, staging: Path):
    """A jinja2 environment; the warm one is reused while no template (by content hash) changed, since jinja's
    own reload check trusts modification times. A command takes compiled templates from the previous site's
    cache (seeded into the staging folder before the first template is loaded)."""
    from kernelbench.sitegen.render import make_environment

    if warm is None:
        return make_environment(config.templates_dir, staging / CACHE_DIR / "jinja")
    if warm.env is None or warm.env_key != tpl_hash:
        warm.env, warm.env_key = make_environment(config.templates_dir), tpl_hash
    return warm.env


class Stopwatch:
    """Wall time of each stage of a build (printed with --timings, read by the benchmark)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.cpu_start = time.process_time()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.last
        self.last = now

    def total(self) -> float:
        return time.perf_counter() - self.start


def refuse_output_inside_inputs(config: BuildConfig, out_dir: Path) -> None:
    """The build replaces its output folder whole, so an output folder that is, contains or lies inside an input
    folder would delete the inputs (or mix pages into them): refuse it before anything is read or written.

    Guarded: the data folder (a data folder other than this repository as a whole; the repository, whose
    documented output is its own site/, through its runs/, annotations/ and problems/, and the code and
    templates the build runs from), and the folder given with --problems. Links are followed first, so an
    --out that is a link to the data is seen as the data."""
    out = Path(os.path.realpath(out_dir))
    data = Path(os.path.realpath(config.data_dir))
    guarded = [data / "runs", data / "annotations", data / "problems"]
    guarded += [Path(os.path.realpath(p)) for p in (config.problems_dir, config.templates_dir,
                                                     config.static_dir, PACKAGE) if p]
    if data != REPO:
        guarded.append(data)
    elif out == data or out in data.parents:
        guarded.append(data)
    for folder in guarded:
        relation = _overlap(out, folder)
        if relation:
            raise KernelBenchError(
                f"this output folder (--out) {relation} the input folder {folder}; nothing was built",
                path=out,
                hint="choose an --out outside the data folder (the build replaces its output folder whole, "
                     "so it would delete the inputs)")


def _overlap(out: Path, folder: Path) -> str:
    if out == folder:
        return "is"
    if folder in out.parents:
        return "lies inside"
    if out in folder.parents:
        return "contains"
    return ""


# ------------------------------------------------------------------------------------------------ rendering


def render_changed_pages(
    pages: list[Page],
    env,
    tpl_hash: str,
    staging: Path,
    previous: Manifest,
    manifest: Manifest,
    config: BuildConfig,
    pool: RenderPool | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> list[Diagnostic]:
    """Render pages whose input hash changed (or whose file is missing, or whose inputs are settled only where
    they are rendered); reuse the rest as they are. `pool`: render workers started earlier (RenderPool); without
    it, a build with enough heavy pages to render starts its own. `meanwhile`: the build's own work to do while
    the workers render (or before rendering, without them)."""
    todo: list[Page] = []
    diagnostics: list[Diagnostic] = []
    staging_text = str(staging)
    for page in pages:
        if page.settle is not None:
            todo.append(page)
            continue
        digest = page.fingerprint(tpl_hash)
        old = previous.pages.get(page.url)
        # (a string path: ten thousand Paths built only to look at their files cost a tenth of a second)
        if old and old[0] == digest and os.path.exists(os.path.join(staging_text, page.url)):
            manifest.pages[page.url] = old
            diagnostics += [_diag_from_json(d) for d in old[1]]
        else:
            todo.append(page if page.replan is None else page.replan())
    manifest.rendered = len(todo)
    manifest.written = [page.url for page in todo]
    for url, digest, diags, settled in _render_all(todo, env, tpl_hash, staging, config, pool, meanwhile):
        manifest.pages[url] = [digest, [_diag_to_json(d) for d in diags]]
        manifest.settled.update(settled)
        diagnostics += diags
    return diagnostics


def _render_all(todo: list[Page], env, tpl_hash: str, staging: Path, config: BuildConfig,
                pool: RenderPool | None = None, meanwhile: Callable[[], None] | None = None):
    heavy = [p for p in todo if p.parallel]
    light = [p for p in todo if not p.parallel]
    progress = _Progress(len(todo), enabled=config.progress)
    with progress, contextlib.ExitStack() as stack:
        if config.jobs > 1 and len(heavy) >= PARALLEL_THRESHOLD:
            if pool is None:
                started = RenderPool.start(config.jobs)
                assert started is not None  # jobs > 1
                pool = stack.enter_context(started)
            sent = pool.send(heavy, env, tpl_hash, staging)
            # the build's own share, while the workers render: the light pages (the runs index and the problem
            # pages list every run: seconds at ten thousand runs) and what `meanwhile` does
            if meanwhile is not None:
                meanwhile()
            rendered = [_render_one(page, env, tpl_hash, staging) for page in light]
            for result in sent:
                progress.advance()
                yield result
            for result in rendered:
                progress.advance()
                yield result
            return
        if meanwhile is not None:
            meanwhile()
        for page in heavy + light:
            yield _render_one(page, env, tpl_hash, staging)
            progress.advance()


class RenderPool:
    """Render worker processes, forked from the build before it loads the deck when it is a command's full build.

    A worker forked after planning shares the build's memory page for page, and the resident set of each counts
    all of it again (the deck's records, views and pages: half a gigabyte at ten thousand runs), and touching
    those objects (reference counts) copies the pages they lie on. Forked before, a worker holds the code and the
    compiled lexers, and is sent each page to render (`Page` pickles: a run page's RunPageWork travels without
    its folder's descriptor, which the worker opens again and takes only when it is the very folder the build
    opened; a page whose folder it cannot take is rendered by the build itself, from its own descriptor)."""

    def __init__(self, executor):
        self.executor = executor

    @classmethod
    def start(cls, jobs: int) -> RenderPool | None:
        """Workers for `jobs` > 1 (None otherwise), forked now."""
        if jobs <= 1:
            return None
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from kernelbench.sitegen import plan  # what rendering a run page runs, imported once for every worker
        from kernelbench.sitegen.render import make_environment  # noqa: F401
        from kernelbench.sitegen.runpage import compile_lexers

        plan.viewer_version()  # imports the transcript viewer
        compile_lexers()  # once, inherited by every worker, rather than once in each
        executor = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                                       initializer=_die_with_build, initargs=(os.getpid(),))
        executor.submit(int).result()  # a pool started with fork forks every worker at its first task: now
        return cls(executor)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End the workers (again: nothing)."""
        self.executor.shutdown(wait=True, cancel_futures=True)

    def send(self, pages: list[Page], env, tpl_hash: str, staging: Path):
        """Hand every page to the workers now; the results, in the pages' order, as they are taken."""
        from functools import partial

        from kernelbench.sitegen import urls

        shared = (urls.claims(own_slugs=False), _environment_spec(env), tpl_hash, staging)
        jobs = self.executor._max_workers
        # small chunks: a worker takes the next one as it finishes, so the last chunks of the build end together (a
        # chunk of an eighth of each worker's share could leave one core idle for seconds at the end of a large
        # build), and a chunk's round trip costs little beside rendering its pages
        chunk = max(1, min(MAX_CHUNK, len(pages) // (jobs * 8)))
        results = self.executor.map(partial(_render_sent, shared), pages, chunksize=chunk)
        return self._taken(results, pages, env, tpl_hash, staging)

    @staticmethod
    def _taken(results, pages: list[Page], env, tpl_hash: str, staging: Path):
        for index, result in enumerate(results):
            if result is None:  # the worker could not take the run's folder: rendered here, from the build's own
                result = _render_one(pages[index], env, tpl_hash, staging)
            yield result


def _environment_spec(env) -> tuple[str, str | None]:
    """What a render worker makes the same jinja2 environment from (render.make_environment): the templates
    folder and the compiled templates' folder."""
    cache = env.bytecode_cache
    return env.loader.searchpath[0], None if cache is None else cache.directory


_WORKER: dict = {}  # in a render worker: the addresses handed out and the environment, as last sent


def _render_sent(shared: tuple, page: Page):
    """In a render worker: one page sent by the build; None when its run folder is not the one the build opened."""
    from kernelbench.sitegen import urls
    from kernelbench.sitegen.render import make_environment

    claims, spec, tpl_hash, staging = shared
    if _WORKER.get("claims") != claims:
        urls.restore_claims(claims)
        _WORKER["claims"] = claims
    env = _WORKER.get(spec)
    if env is None:
        env = _WORKER[spec] = make_environment(Path(spec[0]), None if spec[1] is None else Path(spec[1]))
    attach = getattr(getattr(page.context, "__self__", None), "attach_folder", None)
    if attach is not None and not attach():
        return None
    return _render_one(page, env, tpl_hash, staging)


PR_SET_PDEATHSIG = 1


def _die_with_build(build_pid: int) -> None:
    """Make a render worker end with the build that started it, even a build killed by SIGKILL (which has no
    chance to stop its pool): the kernel sends the worker SIGKILL when its parent ends. The worker's garbage
    collector runs whatever the build's was doing when it forked (paused while the build renders)."""
    import gc

    gc.enable()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the worker ends when it finds its call queue closed
        return
    if os.getppid() != build_pid:  # the build ended before the signal was armed
        os._exit(1)


def _render_one(page: Page, env, tpl_hash: str, staging: Path) -> tuple[str, str, list[Diagnostic], dict]:
    """Render one page into the staging folder: its url, its fingerprint, what it reported, and the signatures
    of the files its inputs were settled from (`Page.settle`)."""
    from kernelbench.sitegen.render import render_page

    settled = page.settle() if page.settle is not None else {}
    digest = page.fingerprint(tpl_hash)
    target = staging / page.url
    # a run folder also holds the viewer's chunks: the run page's transcript tab clears it or keeps it
    target.parent.mkdir(parents=True, exist_ok=True)
    diagnostics: list[Diagnostic] = []
    try:
        text = render_page(env, page, {"diagnostics_out": diagnostics, "staging": staging})
    except KernelBenchError:  # a template error: the templates are code, not data, and every page needs them
        raise
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError,
            UnicodeError, OSError) as exc:
        diagnostics.append(_unrendered(page, exc))
        text = _degraded_page(page, exc)
    target.unlink(missing_ok=True)
    target.write_text(text, encoding="utf-8")
    return page.url, digest, diagnostics, settled


def _unrendered(page: Page, exc: BaseException) -> Diagnostic:
    """What a page that could not be rendered tells the report: the input behind it and what went wrong."""
    return Diagnostic(
        path=page.sources[0] if page.sources else page.url,
        message=f"its page {page.url} could not be rendered ({type(exc).__name__}: {str(exc)[:200]}); "
        "a page saying so stands in for it",
        hint="kernelbench should have reported what is wrong with this input: please report it as a bug, "
        "with the file")


def _degraded_page(page: Page, exc: BaseException) -> str:
    """A bare page in place of one that failed, so links to it still lead somewhere that says why."""
    title = html.escape(page.title)
    why = html.escape(f"{type(exc).__name__}: {str(exc)[:500]}")
    home = html.escape(page.href("index.html"))
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<h1>{title}</h1><p>This page could not be built from its inputs: {why}</p>"
            f"<p><a href='{home}'>Back to the leaderboard</a></p></body></html>\n")


def prune_stale_pages(staging: Path, pages: list[Page], previous: Manifest) -> None:
    """Delete pages of the previous site that no longer exist (a run removed, a problem renamed).

    The previous manifest says what the previous build wrote, so nothing needs walking.
    """
    keep = {p.url for p in pages}
    for url in set(previous.pages) - keep:
        target = staging / url
        if url.startswith("runs/") and url.endswith("/index.html") and url.count("/") == 2:
            shutil.rmtree(target.parent, ignore_errors=True)  # the run's folder holds its viewer chunks too
            viewer_cache_file(staging, url.split("/")[1]).unlink(missing_ok=True)
        else:
            target.unlink(missing_ok=True)


def _diag_to_json(d: Diagnostic) -> dict:
    return {
        "path": str(d.path) if d.path is not None else None,
        "message": d.message,
        "line": d.line,
        "hint": d.hint,
        "severity": d.severity,
    }


def _diag_from_json(data: dict) -> Diagnostic:
    return Diagnostic(**data)


class _Progress:
    """A rich progress bar over rendered pages (quiet in tests and in the dev server), shown only for a build that
    renders enough pages to be watched: a rebuild after one edit renders in a blink, and importing the bar's
    library would cost it more than its page."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self._bar, self._task = total, enabled and total >= PROGRESS_PAGES, None, None

    def __enter__(self):
        if self.enabled:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("rendering pages", total=self.total)
        return self

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
