"""Everything the site is built from, loaded and checked in one pass: `load_dataset(data_dir, problems_dir)`.

Layout read (all optional; an empty folder is an empty dataset):

    <data_dir>/runs/<run_id>/result.json          RunResult (plus the run's files: solution.py, logs, transcript)
    <data_dir>/annotations/<run_id>.yaml          Annotation
    <data_dir>/annotations/writeups/<slug>.md     front matter (WriteupMeta) + markdown body
    <problems_dir>/<id>/                          Problem (kernelbench.problems.problem.open_problem)
    <problems_dir>/<id>/baselines/<gpu>.json      ProblemBaselines

Loading never raises for bad input: each broken file becomes a `Diagnostic` (file, line, what to do) in
`Dataset.diagnostics`, and the item is left out (unparseable files) or kept and marked (an annotation whose quotes
no longer match keeps its `QuoteCheck`s with state MISMATCH). Stable API for the site build: `load_dataset`,
`Dataset` and the record classes below; fields are only ever added.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import orjson

from kernelbench import inputs
from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.fileio import ModelLoadError, decode_text, load_json_model, load_yaml, parse_model
from kernelbench.inputs import InputRefused
from kernelbench.base.decks import MAIN_DECK
from kernelbench.results.annotation import Annotation, Quote, WriteupMeta
from kernelbench.results.run import RESULT_FILE, RunResult

if TYPE_CHECKING:  # their models are imported where problems are loaded: a rebuild that loads none skips them
    from kernelbench.problems.baselines import BaselineNotes, ProblemBaselines
    from kernelbench.problems.problem import Problem
    from kernelbench.problems.spec import ProblemSpec

UNVERIFIABLE_NOTE = "unverifiable: run files not published"
T = TypeVar("T")


# --------------------------------------------------------------------------------------------- parse cache

class ParseCache:
    """Validated inputs kept from one load to the next, keyed by each file's path and the hash of its bytes.

    Files are read and hashed on every load (microseconds for an annotation), and only the parse and validation
    (a millisecond or more each) are skipped, and only when the bytes are exactly those parsed before; so an edit
    is always seen. The one exception is a file read through a run folder's descriptor with its status
    (`parse(..., status=)`): its status is kept beside its hash, and the next load takes its value without
    reading it when the status taken through the folder is the same (`unchanged`). A status is the file's
    device, inode, size, mtime and ctime; an edit that keeps size and mtime still moves the ctime, which no
    system call sets back. As in git's index, a status is trusted only for a file last changed well before the
    load that read it began (a file written within one clock tick of being read could change again within that
    tick and keep its status). Only successful parses are kept (a broken file reports its diagnostics on every
    load). Values are shared between loads and must not be mutated by their users.

    A cache kept between commands comes back as pickled values (`stored`), each unpickled when a load first asks
    for it and saved again as the same bytes (`pickled`): a rebuild after one edit pickles one value, not ten
    thousand.
    """

    def __init__(self, entries: dict[tuple[str, bytes], Any] | None = None,
                 statuses: dict[str, tuple[tuple, bytes, int]] | None = None,
                 stored: dict[tuple[str, bytes], bytes] | None = None):
        self.entries = dict(entries or {})
        self.stored = dict(stored or {})  # values pickled by an earlier command, by key
        self.used: dict[tuple[str, bytes], Any] = {}  # the entries the latest load needed (what to keep)
        # path -> (status, hash of the bytes read, when the load that read them began)
        self.statuses = dict(statuses or {})
        self.statuses_used: dict[str, tuple[tuple, bytes, int]] = {}
        self.hits = self.misses = 0
        self.load_started_ns = time.time_ns()

    def parse(self, path: Path, data: bytes, parse: Callable[[bytes], T],
              status: os.stat_result | None = None) -> T:
        """`parse(data)` (the bytes of the file at `path`), or the value parsed before from the same bytes.
        `status`: the status of the open file the bytes were read from, kept for `unchanged`."""
        digest = hashlib.blake2b(data, digest_size=16).digest()
        key = (str(path), digest)
        value = self._known(key)
        if value is not MISSING:
            self.hits += 1
        else:
            self.misses += 1
            value = self.entries[key] = parse(data)
        self.used[key] = value
        if status is not None:
            self.statuses_used[key[0]] = (file_status(status), digest, self.load_started_ns)
        return value

    def unchanged(self, path: str, status: os.stat_result | None) -> Any:
        """The value parsed before from the file at `path` when `status` (taken now, through its folder) shows
        it unchanged since it was read; MISSING when it must be read."""
        if status is None:
            return MISSING
        return self.unchanged_as(path, file_status(status))

    def unchanged_as(self, path: str, status: tuple) -> Any:
        """`unchanged`, with the file's status as `file_status` gives it (taken by whoever vouches for it: the
        build's file-system record, say)."""
        known = self.statuses.get(path)
        if known is None:
            return MISSING
        kept, digest, read_from_ns = known
        if kept != status or max(status[4], status[5]) >= read_from_ns - RACY_MARGIN_NS:
            return MISSING
        value = self._known((path, digest))
        if value is not MISSING:
            self.hits += 1
            self.used[(path, digest)] = value
            self.statuses_used[path] = known
        return value

    def keep(self, path: str) -> bool:
        """Carry the value of the file at `path` (read with its status) into this load unread, for a caller that
        knows the file is unchanged since the previous load (a watching build's file-system record); False when
        there is nothing to carry."""
        known = self.statuses.get(path)
        return known is not None and self.keep_key((path, known[1]), known)

    def keep_key(self, key: tuple[str, bytes], status: tuple | None = None) -> bool:
        value = self._known(key)
        if value is MISSING:
            return False
        self.hits += 1
        self.used[key] = value
        if status is not None:
            self.statuses_used[key[0]] = status
        return True

    def _known(self, key: tuple[str, bytes]) -> Any:
        value = self.entries.get(key, MISSING)
        if value is MISSING and key in self.stored:
            value = self.entries[key] = pickle.loads(self.stored[key])  # the build's own cache, not an input
        return value

    def pickled(self, key: tuple[str, bytes]) -> bytes:
        """A used value as bytes to keep: the bytes it came back as, or the value pickled now."""
        stored = self.stored.get(key)
        return stored if stored is not None else pickle.dumps(self.used[key], protocol=pickle.HIGHEST_PROTOCOL)

    def unchanged_since_loaded(self) -> bool:
        """Whether the latest load used exactly the values and statuses this cache came back with."""
        return (not self.misses and self.used.keys() == self.stored.keys()
                and self.statuses_used == self.statuses)

    def start_load(self) -> None:
        """Forget the previous load's bookkeeping, keeping only what it used (deleted files drop out)."""
        if self.used:
            self.entries = self.used
            self.statuses = self.statuses_used
            self.stored = {key: blob for key, blob in self.stored.items() if key in self.used}
        self.used, self.statuses_used, self.hits, self.misses = {}, {}, 0, 0
        self.load_started_ns = time.time_ns()


MISSING = object()  # what `ParseCache.unchanged` answers for a file it cannot vouch for
RACY_MARGIN_NS = 2_000_000_000  # file systems whose timestamps lag the wall clock (coarse ticks, network mounts)


def file_status(info: os.stat_result) -> tuple[int, int, int, int, int, int]:
    """What tells a file apart from its earlier self without reading it."""
    return (info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _no_cache() -> ParseCache:
    return ParseCache()


# --------------------------------------------------------------------------------------------- records

class RunFacts(NamedTuple):
    """What the boards, the indexes and the pages other than a run's own take of its result.json beside its run
    view and its board trial: its identity, where its transcript is and its budget, the baselines its grading
    recorded, its GPU's name and whether it was regraded from another benchmark's board."""

    run_id: str
    agent: str
    harness: str
    model: str
    effort: str | None
    deck: str
    problem: str
    gpu: str
    started: Any  # datetime | None
    source: str
    scripted: bool
    budget_s: float | None
    transcript: str | None
    gpu_name: str
    baselines: tuple[tuple[str, float | None], ...]  # grading.baselines, sorted by line
    regraded: bool  # it has a provenance

    @classmethod
    def of(cls, result: RunResult) -> RunFacts:
        return cls(run_id=result.run_id, agent=result.agent, harness=result.harness, model=result.model,
                   effort=result.effort, deck=result.deck, problem=result.problem, gpu=result.gpu,
                   started=result.started, source=result.source, scripted=result.scripted,
                   budget_s=result.session.budget_s, transcript=result.session.transcript,
                   gpu_name=result.environment.gpu_name, baselines=tuple(sorted(result.grading.baselines.items())),
                   regraded=result.provenance is not None)


class CompactResult:
    """A run's result.json as a site build keeps it (`load_dataset(..., compact=)`): the hash of the bytes it was
    validated from, its facts, what the site derived from it while the validated result was at hand (`derived`: its
    run view's own part), and its board trial with the hash of the baselines file it was made against (`trial`).
    The validated model itself (28 KB of Python objects for a 5 KB result.json) is not kept, nor, but for a run
    regraded from another benchmark's board (whose diff row every build makes from the whole result), its bytes:
    a build of ten thousand runs would hold them all at once. A trial to make against other baselines reads the
    file again through the run's folder, and takes it only as the bytes hashed (`result`). A value of the parse
    cache: not mutated, but for `keep_trial`, a memo of what it gives."""

    __slots__ = ("derived", "digest", "facts", "raw", "trial")

    def __init__(self, digest: bytes, raw: bytes | None, facts: RunFacts, derived: Any = None,
                 trial: tuple[str | None, Any] | None = None):
        self.digest, self.raw, self.facts, self.derived, self.trial = digest, raw, facts, derived, trial

    @classmethod
    def of(cls, raw: bytes, facts: RunFacts, derived: Any, trial: tuple[str | None, Any]) -> CompactResult:
        return cls(hashlib.blake2b(raw, digest_size=16).digest(), raw if facts.regraded else None, facts, derived,
                   trial)

    def __getstate__(self) -> tuple:
        # `derived` (a dict of plain values, a run view's own part) travels as JSON when JSON gives it back exactly
        # (the same types, values and key order: `_json_exact`), which decodes in half the time pickle takes, at ten
        # thousand runs a tenth of a second of a build that loads the deck; as itself otherwise
        as_json = _json_exact(self.derived)
        return (self.digest, self.raw, self.facts, as_json, self.derived if as_json is None else None,
                self.trial)

    def __setstate__(self, state: tuple) -> None:
        self.digest, self.raw, self.facts, as_json, derived, self.trial = state
        self.derived = derived if as_json is None else orjson.loads(as_json)

    def result(self, record: RunRecord) -> RunResult:
        """The validated result, from the bytes kept or read again through the run's folder; InputRefused when
        those are not the bytes it was loaded from (the file changed since: the next load reads it afresh)."""
        path = record.result_path
        raw = self.raw
        if raw is None:
            raw = record.folder.read_bytes(RESULT_FILE, inputs.RESULT)
            if raw is None or hashlib.blake2b(raw, digest_size=16).digest() != self.digest:
                raise InputRefused("changed while the site was being built; the site shows it as it was loaded",
                                   path=path, hint="build again once nothing is writing to the data folder")
        return load_json_model(path, RunResult, decode_text(path, raw))

    def trial_for(self, baselines_digest: str | None) -> Any:
        """The board trial made against the baselines file of this hash (None: no such file); None when it was
        made against another."""
        if self.trial is None or self.trial[0] != baselines_digest:
            return None
        return self.trial[1]

    def kept_trial(self) -> Any:
        """The board trial as it was last made, whatever the baselines."""
        return None if self.trial is None else self.trial[1]

    def keep_trial(self, baselines_digest: str | None, trial: Any) -> None:
        self.trial = (baselines_digest, trial)

    def for_page(self) -> CompactResult:
        """What a render worker takes to render the run's page: its facts (its run view travels beside)."""
        return CompactResult(self.digest, None, self.facts)


def _json_exact(value: Any) -> bytes | None:
    """`value` as JSON, when decoding that gives back an equal value of the very same types, in the same order
    (no tuple, str subclass, enum, float that JSON cannot write, or key that is not a string); None otherwise."""
    if value is None:
        return None
    try:
        blob = orjson.dumps(value)
    except TypeError:
        return None
    return blob if _same(orjson.loads(blob), value) else None


def _same(back: Any, value: Any) -> bool:
    kind = type(value)
    if type(back) is not kind:
        return False
    if kind is dict:
        return list(back) == list(value) and all(_same(back[key], value[key]) for key in value)
    if kind is list:
        return len(back) == len(value) and all(_same(b, v) for b, v in zip(back, value))
    if kind is float:
        return repr(back) == repr(value)  # (the sign of a zero too)
    if kind in (str, int, bool) or value is None:
        return back == value
    return False


@dataclass
class RunRecord:
    """One run directory that loaded.

    run_id: the result's run_id (equals the folder name; a folder whose name differs is reported and left out).
    path: the run directory (solution.py, check.log, benchmark.log, transcript live here when published).
    result: the validated result.json; None where the load kept it compact (`compact`: a site build's load),
      whence `full_result()` validates it again (from the file, read again through the run's folder).
    result_path: path of result.json (for diagnostics and the run page's result.json tab).
    """

    run_id: str
    path: Path
    result: RunResult | None
    result_path: Path
    resolved_path: Path | None = field(default=None, repr=False, compare=False)  # `path` resolved, if known
    opened: inputs.Folder | None = field(default=None, repr=False, compare=False)  # the folder as loaded
    compact: CompactResult | None = field(default=None, repr=False, compare=False)
    # a record the load took without opening its folder (KeptInputs.unopened): the folder's identity (device,
    # inode) as the file-system record that vouched for it saw it, the root its files must stay inside, and the
    # resolved folder (inputs.Folder.real_text)
    unopened: tuple[tuple[int, int], Path, str] | None = field(default=None, repr=False, compare=False)

    @property
    def facts(self) -> RunFacts:
        """What the pages other than the run's own take of its result (see RunFacts)."""
        return self.compact.facts if self.compact is not None else RunFacts.of(self.full_result())

    def full_result(self) -> RunResult:
        """The validated result: the one kept, or validated again (`compact`; InputRefused when the file is no
        longer what was loaded: CompactResult.result)."""
        if self.result is not None:
            return self.result
        assert self.compact is not None, "a run record holds its validated result or its compact form"
        return self.compact.result(self)

    @property
    def imported(self) -> bool:
        """True for cells imported from a published board (`source` starts with "import:"): no transcript."""
        return self.facts.source.startswith("import:")

    def file(self, name: str) -> Path | None:
        """A file of the run directory by relative name, or None when absent or refused (see `locate`)."""
        try:
            return self.locate(name)
        except InputRefused:
            return None

    def locate(self, name: str) -> Path | None:
        """Where a file of the run directory is (links inside the folder followed); None when nothing is there.

        Raises InputRefused for a name or a link that leads outside the run folder, a loop of links, or
        anything but a regular file (kernelbench.inputs states the policy). The path is for reports and
        pages: the file is read through the folder's descriptor (`read_bytes`, `read_head`), never by it."""
        found = self.folder.resolve(name)
        return None if found is None else self.folder.shown(found)

    def read_bytes(self, name: str, kind: inputs.Kind) -> bytes | None:
        return self.folder.read_bytes(name, kind)

    def read_head(self, name: str, kind: inputs.Kind = inputs.SHOWN) -> tuple[bytes, int] | None:
        return self.folder.read_head(name, kind)

    def reader_path(self, name: str) -> Path | None:
        """A path to the file for a reader that opens it itself (see `inputs.Folder.path_for_reader`)."""
        return self.folder.path_for_reader(name)

    @property
    def locate_root(self) -> Path:
        """The resolved run folder every file of the run must stay inside."""
        return self.folder.real

    @functools.cached_property
    def folder(self) -> inputs.Folder:
        """The run folder, opened once: by the load (which checked where it leads), here for a record the load took
        unopened (`unopened`: the very folder the file-system record saw, or, when it was swapped since, the folder
        now there, opened as a load opens one), or here for a record made by hand from a folder its maker trusts."""
        if self.opened is not None:
            return self.opened
        if self.unopened is not None:
            identity, root, real = self.unopened
            found = inputs.Folder.reopen(self.path, real, identity) or inputs.Folder.open(self.path, root)
            if found is None:
                raise FileNotFoundError(f"{self.path}: removed while the site was being built")
            return found
        return inputs.Folder.open_path(self.resolved_path or self.path)

    def opened_folder(self) -> inputs.Folder | None:
        """The run folder when it has been opened (by the load or since), without opening it."""
        return self.opened or self.__dict__.get("folder")

    @property
    def folder_text(self) -> str:
        """The resolved run folder as text (`inputs.Folder.real_text`), without opening a folder the load took
        unopened."""
        if self.opened is None and self.unopened is not None:
            return self.unopened[2]
        return self.folder.real_text


class QuoteState(str, Enum):
    """Outcome of checking one quote against the run's files."""

    VERIFIED = "verified"          # text equals the named lines, verbatim
    MISMATCH = "mismatch"          # the lines differ from the text (an error: fix the quote or the lines)
    MISSING_FILE = "missing_file"  # the named file is not in the run directory (an error)
    OUT_OF_RANGE = "out_of_range"  # the file is shorter than the named lines (an error)
    UNVERIFIABLE = "unverifiable"  # imported run whose files were never published: not an error
    NO_RUN = "no_run"              # the annotation's run is unknown, so nothing to check against (reported once)

    @property
    def is_problem(self) -> bool:
        return self in (QuoteState.MISMATCH, QuoteState.MISSING_FILE, QuoteState.OUT_OF_RANGE)


@dataclass
class QuoteCheck:
    """One quote of an annotation and what checking it found.

    index: position in `annotation.quotes`. state: see QuoteState. note: human text for the site
    ("unverifiable: run files not published", "line 12 differs: ..."). actual: the file's text for those lines
    when the file exists (so the site can show quote and reality side by side); None otherwise.
    line: line of this quote inside the annotation YAML (for diagnostics and editor links).
    """

    index: int
    quote: Quote
    state: QuoteState
    note: str = ""
    actual: str | None = None
    line: int | None = None


@dataclass
class AnnotationRecord:
    """One annotation YAML that parsed.

    path: the YAML file. annotation: the validated model. run_known: whether `run_id` names a loaded run
    (False is reported as an error and the annotation is attached to nothing). quote_checks: one per quote.
    """

    path: Path
    annotation: Annotation
    run_known: bool
    quote_checks: list[QuoteCheck] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.annotation.run_id

    @property
    def quotes_ok(self) -> bool:
        """No quote is a problem (verified or unverifiable ones are fine)."""
        return not any(c.state.is_problem for c in self.quote_checks)


@dataclass
class Writeup:
    """`annotations/writeups/<slug>.md`: meta from the front matter, `body` the markdown after it.

    body_line: the file line where the body starts (to map markdown positions back to the file).
    unknown_runs: cited run ids that are not in the dataset (each also reported as a diagnostic).
    """

    slug: str
    path: Path
    meta: WriteupMeta
    body: str
    body_line: int = 1
    unknown_runs: list[str] = field(default_factory=list)


@dataclass
class ProblemRecord:
    """A problem of the deck, opened as every command opens one (kernelbench.problems.problem.open_problem)."""

    problem: Problem

    @property
    def id(self) -> str:
        return self.problem.id

    @property
    def path(self) -> Path:
        return self.problem.folder

    @property
    def spec(self) -> ProblemSpec:
        return self.problem.spec


@dataclass
class KeptInputs:
    """What a watching build takes from its previous load without reading it again, because its file-system record
    shows the files unchanged since (sitegen.snapshot.unchanged_names): run records by folder name (their folders
    still open) and annotation records by path, each with what its load reported and the run it was checked
    against (the record is kept only while that run is still the one its run id names). Parse-cache keys of the
    annotations, so the cache carries them on."""

    runs: dict[str, RunRecord] = field(default_factory=dict)
    annotations: dict[str, tuple[AnnotationRecord, list[Diagnostic], RunRecord | None]] = field(default_factory=dict)
    annotation_keys: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    # a command's build: the run folders of `unopened_in` (runs/ as the file-system record names it) that record
    # shows unchanged since the previous build, each with its entry's identity (device, inode) and result.json's
    # status (file_status) as the record took them. Such a run is taken from the parse cache without opening its
    # folder when result.json's status is the one its cached value was read with (ParseCache.unchanged_as, racy
    # margin included), and its folder is opened only if a page or check reads one of its files (RunRecord.folder).
    unopened: dict[str, tuple[tuple[int, int], tuple]] = field(default_factory=dict)
    unopened_in: str | None = None


@dataclass
class Dataset:
    """Everything loaded from a data directory.

    runs: run_id → RunRecord. annotations: run_id → AnnotationRecord (also for unknown runs, marked run_known=False).
    writeups: sorted by slug. problems: id → ProblemRecord (only with a problems dir).
    baselines: problem id → (deck, gpu key) → ProblemBaselines. baseline_notes: problem id → BaselineNotes.
    diagnostics: every problem found, in load order.
    """

    data_dir: Path
    problems_dir: Path | None = None
    runs: dict[str, RunRecord] = field(default_factory=dict)
    annotations: dict[str, AnnotationRecord] = field(default_factory=dict)
    writeups: list[Writeup] = field(default_factory=list)
    problems: dict[str, ProblemRecord] = field(default_factory=dict)
    baselines: dict[str, dict[tuple[str, str], ProblemBaselines]] = field(default_factory=dict)
    baseline_notes: dict[str, BaselineNotes] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # what loading each annotation reported, by its path (for a watching build that keeps the record)
    annotation_reports: dict[str, list[Diagnostic]] = field(default_factory=dict)
    # the run each annotation file that parsed names, by its path (a second annotation of a run included)
    annotation_run_ids: dict[str, str] = field(default_factory=dict)
    # the hash of each loaded run's result.json bytes, by its path (a rebuild tells an edited result apart by it)
    result_digests: dict[str, str] = field(default_factory=dict)
    # the hash of each baselines file's bytes, by (problem id, deck, gpu key), as `baselines` holds it
    baselines_digests: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def annotation_for(self, run_id: str) -> Annotation | None:
        record = self.annotations.get(run_id)
        return record.annotation if record and record.run_known else None

    def baselines_for(self, problem: str, gpu: str, deck: str = MAIN_DECK) -> ProblemBaselines | None:
        """The lines of (deck, problem) on `gpu`: another deck's problem of the same name has its own."""
        return self.baselines.get(problem, {}).get((deck, gpu))

    def baselines_digest(self, problem: str, gpu: str, deck: str = MAIN_DECK) -> str | None:
        """The hash of the bytes `baselines_for` was read from (None: no baselines file)."""
        return self.baselines_digests.get((problem, deck, gpu))


# --------------------------------------------------------------------------------------------- entry point

def load_dataset(data_dir: Path, problems_dir: Path | None = None, *, runs_dir: Path | None = None,
                 annotations_dir: Path | None = None, cache: ParseCache | None = None,
                 kept: KeptInputs | None = None, compact: Compactor | None = None) -> Dataset:
    """Load runs, annotations, writeups, problems and baselines; never raises for bad input.

    problems_dir defaults to `<data_dir>/problems` when that folder exists (an imported data directory keeps its
    baselines there). runs_dir / annotations_dir override `<data_dir>/runs` and `<data_dir>/annotations`
    (writeups are read from `<annotations_dir>/writeups`). Problems load first, then runs, then annotations
    (checked against the runs), then writeups. `cache` (optional) keeps validated files between loads of the
    same folders, so a rebuild after one edit parses one file. `kept`: records a watching build knows unchanged
    since its previous load (see KeptInputs), taken as they are. `compact`: keep each run's result compact
    (RunRecord.compact, made by `compact(result, raw, dataset)` while the validated result is at hand; the
    cache keeps it so too), so that the load never holds every run's validated result at once.

    Every file comes through `kernelbench.inputs` (nothing outside the data folder, or outside a folder given
    explicitly, is read; only regular files; each kind under its size cap), and whatever one file holds, its
    failure becomes diagnostics and that item is left out: the rest loads.
    """
    cache = cache if cache is not None else _no_cache()
    cache.start_load()
    dataset = _empty_dataset(data_dir, problems_dir)
    annotations = _top_folder(dataset, annotations_dir, "annotations")
    if dataset.problems_dir is not None:
        _load_problems(dataset, dataset.problems_dir, cache)
    runs = _top_folder(dataset, runs_dir, "runs")
    kept = kept or KeptInputs()
    if runs is not None:
        _load_runs(dataset, *runs, cache, kept, compact=compact)
    if annotations is not None:
        _load_annotations(dataset, *annotations, cache, kept)
        writeups = _located_folder(dataset, annotations[0] / "writeups", annotations[1])
        if writeups is not None:
            _load_writeups(dataset, writeups, annotations[1], cache)
    _note_result_digests(dataset, cache)
    return dataset


def _empty_dataset(data_dir: Path, problems_dir: Path | None) -> Dataset:
    """The dataset of a data folder before anything is read: its real path, and its problems/ unless named."""
    data_dir = Path(os.path.realpath(data_dir))
    if problems_dir is None and (data_dir / "problems").is_dir():
        problems_dir = data_dir / "problems"
    return Dataset(data_dir=data_dir, problems_dir=_real(problems_dir) if problems_dir else None)


def load_some(data_dir: Path, problems_dir: Path | None, run_names: set[str],
              annotation_names: set[str]) -> Dataset:
    """Only the folders of runs/ and the files of annotations/ named, read, checked and reported as `load_dataset`
    reads, checks and reports them (each annotation checked against the runs loaded here); no problem, other run,
    other annotation or writeup is read. For a rebuild that knows from the file system's record that nothing else
    changed since a full load (sitegen.keptplan), which compares what this gives with what that load gave."""
    cache = _no_cache()
    cache.start_load()
    dataset = _empty_dataset(data_dir, problems_dir)
    annotations = _top_folder(dataset, None, "annotations")
    runs = _top_folder(dataset, None, "runs")
    if runs is not None and run_names:
        _load_runs(dataset, *runs, cache, KeptInputs(), only=run_names)
    if annotations is not None and annotation_names:
        _load_annotations(dataset, *annotations, cache, KeptInputs(), only=annotation_names)
    _note_result_digests(dataset, cache)
    return dataset


def _note_result_digests(dataset: Dataset, cache: ParseCache) -> None:
    for record in dataset.runs.values():
        known = cache.statuses_used.get(str(record.result_path))
        if known is not None:
            dataset.result_digests[str(record.result_path)] = known[1].hex()


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _top_folder(dataset: Dataset, given: Path | None, name: str) -> tuple[Path, Path] | None:
    """(folder, the root its files must stay inside): a folder given explicitly is its own root; the data
    folder's own runs/ and annotations/ must lie inside the data folder."""
    if given is not None:
        folder = _real(given)
        return (folder, folder) if folder.is_dir() else None
    located = _located_folder(dataset, dataset.data_dir / name, dataset.data_dir)
    return (located, dataset.data_dir) if located is not None else None


def _located_folder(dataset: Dataset, path: Path, root: Path) -> Path | None:
    try:
        return inputs.locate(path, root, folder=True)
    except InputRefused as exc:
        dataset.diagnostics.append(exc.diagnostic)
        return None


def _guarded(dataset: Dataset, path: Path, load: Callable[[], T]) -> T | None:
    """`load()` of one input file; whatever the file holds, a failure becomes diagnostics (file, line, hint) and
    None (the item is left out), so one file never stops the load of the others."""
    try:
        return load()
    except (KernelBenchError, OSError) as exc:
        _report(dataset, exc, path)
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, LookupError,
            AttributeError, UnicodeError) as exc:  # a bug of ours that this file brings out: report, go on
        dataset.diagnostics.append(Diagnostic(
            path=path, message=f"could not be read ({type(exc).__name__}: {str(exc)[:200]}); left out",
            hint="kernelbench should have reported what is wrong with this file: please report it as a bug, "
                 "with the file"))
    return None


def _report(dataset: Dataset, exc: Exception, path: Path) -> None:
    """Turn a load failure into diagnostics (one per schema error)."""
    if isinstance(exc, ModelLoadError):
        dataset.diagnostics.extend(exc.diagnostics)
    elif isinstance(exc, KernelBenchError):
        dataset.diagnostics.append(exc.diagnostic)
    elif isinstance(exc, OSError):
        dataset.diagnostics.append(Diagnostic(path=path, message=f"cannot read: {exc.strerror or exc}",
                                              hint="check the file's permissions"))
    else:
        raise exc


def _read(path: Path, root: Path, kind: inputs.Kind) -> bytes | None:
    """The file's bytes through the input policy (None when it is not there; InputRefused when refused)."""
    return inputs.read_bytes(path, root, kind)


# --------------------------------------------------------------------------------------------- problems

def _load_problems(dataset: Dataset, problems_dir: Path, cache: ParseCache) -> None:
    if not problems_dir.is_dir():
        dataset.diagnostics.append(Diagnostic(path=problems_dir, message="problems folder not found",
                                              hint="pass an existing folder, or leave it out"))
        return
    root = problems_dir if not problems_dir.is_relative_to(dataset.data_dir) else dataset.data_dir
    for entry in sorted(p for p in problems_dir.iterdir() if not p.name.startswith((".", "_"))):
        if entry.is_symlink() or entry.is_dir():
            folder = _located_folder(dataset, entry, root)
            if folder is not None:
                _load_problem_folder(dataset, entry, folder, root, cache)


def _load_problem_folder(dataset: Dataset, entry: Path, folder: Path, root: Path, cache: ParseCache) -> None:
    _guarded(dataset, entry, lambda: _load_problem(dataset, entry, folder, root, cache))
    baselines = _located_folder(dataset, folder / "baselines", root)
    for path in sorted(baselines.glob("*.json")) if baselines is not None else ():
        _guarded(dataset, path,
                 functools.partial(_load_baselines_file, dataset, entry.name, path, root, cache))
    if baselines is not None:
        from kernelbench.problems.baselines import NOTES_FILE

        notes = baselines / NOTES_FILE
        _guarded(dataset, notes, lambda: _load_baseline_notes(dataset, entry.name, notes, root, cache))


def _load_problem(dataset: Dataset, entry: Path, folder: Path, root: Path, cache: ParseCache) -> None:
    """The problem in `folder`, opened as every command opens one (kernelbench.problems.problem.open_problem), once
    its files have passed the input policy. A folder in no layout is no problem (a deck's notes, say)."""
    from kernelbench.problems.layouts import detected
    from kernelbench.problems.problem import open_problem

    files = _problem_files(folder, root)
    layout = detected(folder)
    if layout is None:
        return
    if layout.default_deck(folder) != MAIN_DECK:
        # another benchmark's spec is read by running its code (shapes.py, its harness): the site runs none
        raise KernelBenchError(f"is a problem in another benchmark's layout ({layout.title}), not one of this "
                               "deck's own", path=layout.spec_file(folder),
                               hint="keep only this deck's problems here; another benchmark's problems are shown "
                                    "through their regraded runs")
    problem = cache.parse(folder, files, lambda _: open_problem(folder, layout))
    dataset.problems[problem.id] = ProblemRecord(problem)


def _problem_files(folder: Path, root: Path) -> bytes:
    """Every file of the problem folder's top level, read through the input policy (inside `root`, regular files
    under the problem-file cap), before any layout reads one; their names and bytes are the key the opened
    problem is cached under."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in folder.iterdir() if not p.is_dir()):
        data = _read(path, root, inputs.PROBLEM)
        digest.update(path.name.encode() + b"\0" + (data if data is not None else b"") + b"\0")
    return digest.digest()


def _load_baselines_file(dataset: Dataset, problem_id: str, path: Path, root: Path, cache: ParseCache) -> None:
    from kernelbench.problems.baselines import ProblemBaselines

    raw = _read(path, root, inputs.BASELINES)
    if raw is None:
        return
    baselines = cache.parse(path, raw, lambda raw: load_json_model(path, ProblemBaselines, decode_text(path, raw)))
    if baselines.problem != problem_id or baselines.gpu != path.stem:
        dataset.diagnostics.append(Diagnostic(
            path=path, message=f"says problem '{baselines.problem}' on '{baselines.gpu}' but sits at "
                               f"{problem_id}/baselines/{path.name}",
            hint="file baselines as problems/<problem>/baselines/<gpu>.json"))
        return
    dataset.baselines.setdefault(problem_id, {})[(baselines.deck, baselines.gpu)] = baselines
    dataset.baselines_digests[(problem_id, baselines.deck, baselines.gpu)] = hashlib.blake2b(
        raw, digest_size=16).hexdigest()


def _load_baseline_notes(dataset: Dataset, problem_id: str, path: Path, root: Path, cache: ParseCache) -> None:
    from kernelbench.problems.baselines import BaselineNotes

    raw = _read(path, root, inputs.BASELINE_NOTES)
    if raw is None:
        return

    def parse(raw: bytes) -> BaselineNotes:
        data = load_yaml(path, decode_text(path, raw))
        if not isinstance(data, dict):
            raise KernelBenchError("expected a mapping of line name to note", path=path, line=1,
                                   hint="write e.g. `sota: why this library line` (lines: eager, compiled, sota)")
        return parse_model(path, BaselineNotes, data)

    dataset.baseline_notes[problem_id] = cache.parse(path, raw, parse)


# --------------------------------------------------------------------------------------------- runs

def _load_runs(dataset: Dataset, runs_dir: Path, root: Path, cache: ParseCache, kept: KeptInputs,
               only: set[str] | None = None, compact: Compactor | None = None) -> None:
    """Every run folder of runs/ (or those named in `only`)."""
    runs = _opened_folder(dataset, runs_dir, root)
    if runs is None:
        return
    try:
        with os.scandir(runs.fd) as scan:  # the entries' types come with the listing: no stat per folder
            entries = sorted((e for e in scan if not e.name.startswith(".") and (e.is_symlink() or e.is_dir())
                              and (only is None or e.name in only)), key=lambda e: e.name)
        inputs.allow_open_folders(len(entries))
        unopened = kept.unopened if kept.unopened_in == str(runs.path) and compact is not None else {}
        for entry in entries:
            record = kept.runs.get(entry.name)
            if record is not None and not entry.is_symlink() and cache.keep(str(record.result_path)):
                _add_run(dataset, record)
                continue
            known = unopened.get(entry.name)
            if known is not None and not entry.is_symlink():
                record = _unopened_run(runs, entry.name, root, cache, *known)
                if record is not None:
                    _add_run(dataset, record)
                    continue
            _load_run_folder(dataset, runs, entry, root, cache, compact)
    finally:
        runs.close()


def _load_run_folder(dataset: Dataset, runs: inputs.Folder, entry: os.DirEntry, root: Path,
                     cache: ParseCache, compact: Compactor | None = None) -> None:
    """One entry of runs/: its folder opened (relative to runs/ unless it is a link) and its run loaded."""
    runs_dir = runs.path
    try:
        folder = (inputs.Folder.open(runs_dir / entry.name, root) if entry.is_symlink()
                  else inputs.Folder.open_child(runs, entry.name, root))
    except InputRefused as exc:
        dataset.diagnostics.append(exc.diagnostic)
        return
    if folder is None:
        return
    record = _guarded(dataset, runs_dir / entry.name / RESULT_FILE, lambda: _load_run(dataset, folder, cache, compact))
    if record is None:
        folder.close()
        return
    if not _add_run(dataset, record):
        folder.close()


def _unopened_run(runs: inputs.Folder, name: str, root: Path, cache: ParseCache, identity: tuple[int, int],
                  status: tuple) -> RunRecord | None:
    """The run of runs/`name` as the parse cache holds it, its folder left unopened (KeptInputs.unopened); None
    when the cache cannot vouch for its result.json at that status, or holds no compact result of this run (it is
    then loaded as any other). A run regraded from another benchmark's board is loaded: its pages read its
    result.json again."""
    value = cache.unchanged_as(f"{runs.path}/{name}/{RESULT_FILE}", status)  # str(runs.path / name / RESULT_FILE)
    if not isinstance(value, CompactResult) or value.facts.run_id != name or value.facts.regraded:
        return None
    folder = runs.path / name
    return RunRecord(run_id=name, path=folder, result=None, result_path=folder / RESULT_FILE, compact=value,
                     unopened=(identity, root, f"{runs.real_text}/{name}"))  # (runs.real / name, as open_child has it)


def _add_run(dataset: Dataset, record: RunRecord) -> bool:
    if record.run_id in dataset.runs:
        first = dataset.runs[record.run_id].path
        dataset.diagnostics.append(Diagnostic(
            path=record.result_path, message=f"duplicate run id '{record.run_id}' (also in {first})",
            hint="each run directory needs its own run id; remove or rename the copy"))
        return False
    dataset.runs[record.run_id] = record
    return True


def _opened_folder(dataset: Dataset, path: Path, root: Path) -> inputs.Folder | None:
    try:
        return inputs.Folder.open(path, root)
    except InputRefused as exc:
        dataset.diagnostics.append(exc.diagnostic)
        return None


# what a site build's load keeps of a run's result: made from the validated result, the bytes it was validated
# from and the dataset loaded so far (its problems' baselines)
Compactor = Callable[[RunResult, bytes, "Dataset"], CompactResult]


def _load_run(dataset: Dataset, opened: inputs.Folder, cache: ParseCache,
              compact: Compactor | None = None) -> RunRecord | None:
    """The run in the opened folder: result.json and every file after it are read through its descriptor.
    `compact`: the record keeps its result compact (see load_dataset)."""
    folder = opened.path
    path = folder / RESULT_FILE
    raw = None
    result = _unchanged_result(opened, path, cache)
    if result is MISSING:
        read = opened.read_with_status(RESULT_FILE, inputs.RESULT)
        if read is None:
            dataset.diagnostics.append(Diagnostic(
                path=folder, message="run directory without result.json; left out",
                hint="grade the run again (kernelbench grade ... --out) or remove the folder"))
            return None
        raw, status = read

        def parse(raw: bytes) -> RunResult | CompactResult:
            result = load_json_model(path, RunResult, decode_text(path, raw))
            return result if compact is None else compact(result, raw, dataset)

        result = cache.parse(path, raw, parse, status=status)
    kept = result if isinstance(result, CompactResult) else None
    if kept is None and compact is not None:  # a value another kind of load left in the cache
        kept = compact(result, raw if raw is not None else opened.read_bytes(RESULT_FILE, inputs.RESULT) or b"",
                       dataset)
    run_id = kept.facts.run_id if kept is not None else result.run_id
    if run_id != folder.name:
        if raw is None:  # taken from the cache unread: read for the line the report names
            raw = opened.read_bytes(RESULT_FILE, inputs.RESULT) or b""
        original = folder.parent / run_id
        is_copy = "/" not in run_id and "\x00" not in run_id and original.is_dir()
        message = (f"duplicate run id '{run_id}' (also in {original}); left out" if is_copy
                   else f"run_id '{run_id}' differs from its folder name '{folder.name}'; left out")
        dataset.diagnostics.append(Diagnostic(
            path=path, line=_json_key_line(raw, "run_id"), message=message,
            hint="each run directory is named after its own run id; remove the copy or fix run_id"))
        return None
    if kept is not None:
        return RunRecord(run_id=run_id, path=folder, result=None, result_path=path, resolved_path=opened.real,
                         opened=opened, compact=kept)
    return RunRecord(run_id=run_id, path=folder, result=result, result_path=path,
                     resolved_path=opened.real, opened=opened)


def _unchanged_result(opened: inputs.Folder, path: Path, cache: ParseCache) -> RunResult | Any:
    """The run's result as parsed before, when result.json is a plain file whose status (taken through the
    opened folder) shows it unchanged; MISSING otherwise (it is read)."""
    status = opened.plain_status(RESULT_FILE)
    if status is None or isinstance(status, inputs.NotPlain) or not stat.S_ISREG(status.st_mode):
        return MISSING
    return cache.unchanged(str(path), status)


def _json_key_line(raw: bytes, key: str) -> int | None:
    at = raw.find(f'"{key}"'.encode())
    return raw.count(b"\n", 0, at) + 1 if at >= 0 else None


# --------------------------------------------------------------------------------------------- annotations

def _load_annotations(dataset: Dataset, folder: Path, root: Path, cache: ParseCache, kept: KeptInputs,
                      only: set[str] | None = None) -> None:
    """Every annotation file of the folder (or those named in `only`)."""
    found = (sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")) if only is None else
             [folder / name for suffix in (".yaml", ".yml") for name in sorted(only) if name.endswith(suffix)])
    for path in found:
        before = len(dataset.diagnostics)
        record = _kept_annotation(dataset, str(path), cache, kept)
        if record is None:
            record = _guarded(dataset, path, functools.partial(load_annotation_file, path, dataset, cache, root))
        dataset.annotation_reports[str(path)] = dataset.diagnostics[before:]
        if record is None:
            continue
        dataset.annotation_run_ids[str(path)] = record.run_id
        if record.run_id in dataset.annotations:
            dataset.diagnostics.append(Diagnostic(
                path=path, message=f"second annotation for run '{record.run_id}' "
                                   f"(first: {dataset.annotations[record.run_id].path}); left out",
                hint="keep one annotation per run, in annotations/<run_id>.yaml"))
            continue
        dataset.annotations[record.run_id] = record


def _kept_annotation(dataset: Dataset, path: str, cache: ParseCache, kept: KeptInputs) -> AnnotationRecord | None:
    """The annotation record of the previous load, with what it reported, when the file is unchanged and its run id
    still names the run (or no run) it was checked against; None: load it."""
    found = kept.annotations.get(path)
    key = kept.annotation_keys.get(path)
    if found is None or key is None:
        return None
    record, reported, run = found
    if dataset.runs.get(record.run_id) is not run or not cache.keep_key(key):
        return None
    dataset.diagnostics.extend(reported)
    return record


def load_annotation_file(path: Path, dataset: Dataset, cache: ParseCache | None = None,
                         root: Path | None = None) -> AnnotationRecord | None:
    """Parse one annotation YAML and check it against the dataset's runs (diagnostics go to `dataset`).

    `root`: the resolved folder the file must stay inside (default: the dataset's data folder)."""

    def parse(raw: bytes) -> tuple[Any, Annotation]:
        data = load_yaml(path, decode_text(path, raw))
        if not isinstance(data, dict):
            raise KernelBenchError("expected a mapping at the top level", path=path, line=1,
                                   hint="an annotation has run_id, verdict, summary, quotes, implication")
        return data, parse_model(path, Annotation, data)

    try:
        raw = _read(path, root or dataset.data_dir, inputs.ANNOTATION)
        if raw is None:
            return None
        data, annotation = (cache or _no_cache()).parse(path, raw, parse)
    except (KernelBenchError, OSError) as exc:
        _report(dataset, exc, path)
        return None
    if path.stem != annotation.run_id:
        dataset.diagnostics.append(Diagnostic(
            path=path, line=data.key_lines.get("run_id"), severity="warning",
            message=f"file name differs from run_id '{annotation.run_id}'",
            hint=f"rename it to {annotation.run_id}.yaml"))
    run = dataset.runs.get(annotation.run_id)
    if run is None:
        dataset.diagnostics.append(Diagnostic(
            path=path, line=data.key_lines.get("run_id"),
            message=f"annotation for unknown run '{annotation.run_id}'",
            hint="check the run id against runs/ (or add the run directory)"))
    else:
        _check_identity(dataset, path, data, annotation, run.facts)
    texts: dict[str, Any] = {}  # each quoted file read once, however many quotes name it
    checks = [check_quote(q, run, i, _quote_line(data, i), texts) for i, q in enumerate(annotation.quotes)]
    for check in checks:
        if check.state.is_problem:
            dataset.diagnostics.append(Diagnostic(
                path=path, line=check.line, message=f"quote {check.index + 1} ({check.quote.file}:"
                                                    f"{check.quote.lines[0]}-{check.quote.lines[1]}): {check.note}",
                hint="copy the lines again (kernelbench annotate new ... --quote FILE:A-B) or fix `lines`"))
    return AnnotationRecord(path=path, annotation=annotation, run_known=run is not None, quote_checks=checks)


def _quote_line(data: Any, index: int) -> int | None:
    quotes = data.get("quotes") if isinstance(data, dict) else None
    lines = getattr(quotes, "item_lines", None)
    return lines[index] if lines and index < len(lines) else None


def _check_identity(dataset: Dataset, path: Path, data: Any, annotation: Annotation, result: RunFacts) -> None:
    """Identity fields the auditor copied must agree with the run (peak_fraction is a snapshot, not checked)."""
    for key in ("harness", "model", "problem", "effort"):
        said = getattr(annotation, key)
        actual = getattr(result, key)
        if said and said != actual:
            dataset.diagnostics.append(Diagnostic(
                path=path, line=data.key_lines.get(key), severity="warning",
                message=f"{key} '{said}' differs from the run's '{actual}'",
                hint=f"set {key}: {actual} (or check that the run id is right)"))


# what str.splitlines() splits on: quotes number lines as the authoring tool and editors do
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
MAX_ACTUAL_SHOWN = 64 * 1024  # characters of a file's lines kept to show beside a quote that does not match


def file_lines(text: str, first: int, last: int) -> str | None:
    """Lines first..last (1-based, inclusive, numbered as `str.splitlines` numbers them) with their line
    endings; None if the text is shorter. Scans only as far as line `last`: no list of every line is made."""
    start = 0 if first == 1 else None
    number = 0
    for number, match in enumerate(_LINE_END.finditer(text), start=1):
        if number == first - 1:
            start = match.end()
        if number == last:
            return text[start:match.end()]
    begin = match.end() if number else 0
    if number + 1 == last and begin < len(text):  # the last line, without a line end
        return text[begin if start is None else start:]
    return None


def count_lines(text: str) -> int:
    """len(text.splitlines()), without the list."""
    ends = 0
    last_end = 0
    for ends, match in enumerate(_LINE_END.finditer(text), start=1):
        last_end = match.end()
    return ends + (last_end < len(text))


def quote_matches(text: str, actual: str) -> bool:
    """Verbatim equality, except that a single final line ending may be present on one side only."""
    return _strip_one_eol(text) == _strip_one_eol(actual)


def _strip_one_eol(text: str) -> str:
    for eol in ("\r\n", "\n"):
        if text.endswith(eol):
            return text[: -len(eol)]
    return text


def check_quote(quote: Quote, run: RunRecord | None, index: int = 0, line: int | None = None,
                texts: dict[str, Any] | None = None) -> QuoteCheck:
    """Check one quote against its run's files (pure except for reading that one file, through the policy).
    `texts` keeps each file's text (or why it cannot be read) for the other quotes of the same annotation."""
    first, last = quote.lines
    if run is None:
        return QuoteCheck(index, quote, QuoteState.NO_RUN, "run not found", line=line)
    texts = {} if texts is None else texts
    if quote.file not in texts:
        texts[quote.file] = _quoted_text(run, quote.file)
    text = texts[quote.file]
    if isinstance(text, InputRefused):
        return QuoteCheck(index, quote, QuoteState.MISSING_FILE, f"'{quote.file}' {text.diagnostic.message}",
                          line=line)
    if isinstance(text, KernelBenchError):
        return QuoteCheck(index, quote, QuoteState.MISMATCH, text.diagnostic.message, line=line)
    if text is None:
        if run.imported:
            return QuoteCheck(index, quote, QuoteState.UNVERIFIABLE, UNVERIFIABLE_NOTE, line=line)
        return QuoteCheck(index, quote, QuoteState.MISSING_FILE,
                          f"'{quote.file}' is not in the run directory {run.path}", line=line)
    actual = file_lines(text, first, last)
    if actual is None:
        return QuoteCheck(index, quote, QuoteState.OUT_OF_RANGE,
                          f"{quote.file} has only {count_lines(text)} lines", line=line)
    if quote_matches(quote.text, actual):
        return QuoteCheck(index, quote, QuoteState.VERIFIED, "matches the file verbatim", actual, line)
    note = _first_difference(quote.text, actual, first)
    return QuoteCheck(index, quote, QuoteState.MISMATCH, note, _shown_actual(actual), line)


def _quoted_text(run: RunRecord, name: str) -> str | KernelBenchError | None:
    """The text of a run's file as quotes see it: None when absent, the error when refused or undecodable."""
    try:
        raw = run.read_bytes(name, inputs.QUOTED)
        return decode_text(run.folder.shown(name), raw) if raw is not None else None
    except KernelBenchError as exc:
        return exc


def _shown_actual(actual: str) -> str:
    """The file's lines as shown beside a quote that does not match them: whole lines, at most
    MAX_ACTUAL_SHOWN characters (a quote may name a range far longer than its text)."""
    if len(actual) <= MAX_ACTUAL_SHOWN:
        return actual
    cut = actual[:MAX_ACTUAL_SHOWN]
    ends = list(_LINE_END.finditer(cut))
    return cut[:ends[-1].end()] if ends else cut


def _first_difference(text: str, actual: str, first: int) -> str:
    said, real = text.splitlines(), _shown_actual(actual).splitlines()
    for offset, (a, b) in enumerate(zip(said, real)):
        if a != b:
            return f"line {first + offset} differs: file has {b[:80]!r}, quote has {a[:80]!r}"
    return f"quote has {len(said)} lines, the file's range has {len(real)}"


# --------------------------------------------------------------------------------------------- writeups

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?", re.DOTALL | re.MULTILINE)


def _load_writeups(dataset: Dataset, folder: Path, root: Path, cache: ParseCache) -> None:
    for path in sorted(folder.glob("*.md")):
        writeup = _guarded(dataset, path, functools.partial(load_writeup, path, dataset, cache, root))
        if writeup is not None:
            dataset.writeups.append(writeup)


def load_writeup(path: Path, dataset: Dataset, cache: ParseCache | None = None,
                 root: Path | None = None) -> Writeup | None:
    """Split front matter from body, validate it, and report cited runs that do not exist."""
    try:
        raw = _read(path, root or dataset.data_dir, inputs.WRITEUP)
        if raw is None:
            return None
        text, body_start, data, meta = (cache or _no_cache()).parse(path, raw, lambda raw: _parse_writeup(path, raw))
    except (KernelBenchError, OSError) as exc:
        _report(dataset, exc, path)
        return None
    unknown = [r for r in meta.runs if r not in dataset.runs]
    for run_id in unknown:
        dataset.diagnostics.append(Diagnostic(path=path, line=data.key_lines.get("runs"),
                                              message=f"cites unknown run '{run_id}'",
                                              hint="check the run id against runs/"))
    body_line = text[:body_start].count("\n") + 1
    return Writeup(slug=path.stem, path=path, meta=meta, body=text[body_start:], body_line=body_line,
                   unknown_runs=unknown)


def _parse_writeup(path: Path, raw: bytes) -> tuple[str, int, Any, WriteupMeta]:
    """The writeup's text, where its body starts, its front matter (line-annotated) and the validated meta."""
    text = decode_text(path, raw)
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise KernelBenchError("no front matter", path=path, line=1,
                               hint="start the file with '---', the title/problem/verdict/runs keys, '---'")
    data = load_yaml(path, "\n" + match.group(1))  # the leading newline keeps YAML lines = file lines
    if not isinstance(data, dict):
        raise KernelBenchError("front matter is not a mapping", path=path, line=2,
                               hint="write key: value lines between the '---' markers")
    return text, match.end(), data, parse_model(path, WriteupMeta, data)
