"""A rebuild decides what to read again from the file system's own evidence (the status of each file and folder,
kept in the build cache): it must build byte for byte the site a build from scratch builds, and see every change,
an edit that keeps a file's size and puts its mtime back included."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from kernelbench import inputs
from kernelbench.results import dataset
from kernelbench.sitegen import output, snapshot
from kernelbench.sitegen.buildcache import CACHE_DIR
from kernelbench.sitegen.manifest import MANIFEST_NAME, FileHasher, Manifest
from kernelbench.sitegen.pipeline import REPO, build_site


@pytest.fixture(autouse=True)
def record_forked(monkeypatch):
    """Every rebuild here has a forked process record the data roots (snapshot.take does so from a thousand
    folders in the previous record): the rebuilds below must see what a single process sees. The tests of other
    modules take the record in the build's own process."""
    monkeypatch.setattr(snapshot, "FORKED_RECORD_FOLDERS", 1)
    monkeypatch.setattr(snapshot, "_forkable", lambda: True)  # threads other tests left behind are idle


@pytest.fixture
def trust_at_once(monkeypatch):
    """Trust a status as soon as it was recorded: a build trusts only files last changed more than two seconds
    before the build that recorded them began, and these tests' files are a moment old."""
    monkeypatch.setattr(snapshot, "RACY_MARGIN_NS", 0)
    monkeypatch.setattr(dataset, "RACY_MARGIN_NS", 0)
    monkeypatch.setattr(FileHasher, "RACY_MARGIN_NS", 0)
    time.sleep(0.02)  # past the file system's clock tick: every input was written before the next build begins


def _same_size_edit(path: Path, old: str, new: str) -> None:
    """Rewrite a file with different bytes of the same length and put its mtime back, to the nanosecond."""
    assert len(old) == len(new)
    st = path.stat()
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def _published(site: Path) -> dict[str, str]:
    """The site as published: every file but the build's own bookkeeping, leaderboard.json without its build
    time."""
    found = {}
    for path in sorted(site.rglob("*")):
        name = str(path.relative_to(site))
        if not path.is_file() or name == MANIFEST_NAME or name.startswith(CACHE_DIR + "/"):
            continue
        data = path.read_bytes()
        if name == "data/leaderboard.json":
            payload = json.loads(data)
            payload.pop("generated", None)
            data = json.dumps(payload, sort_keys=True).encode()
        found[name] = hashlib.sha1(data).hexdigest()
    return found


def _inodes(site: Path) -> dict[str, int]:
    return {str(p.relative_to(site)): p.stat().st_ino for p in site.rglob("*") if p.is_file()}


class _Reads:
    """Counts the run files a build reads through their folders, and the run folders it opens."""

    def __init__(self, monkeypatch):
        self.results: list[str] = []  # run/file read through a run folder
        self.hashed: list[str] = []  # run files opened to be hashed
        self.folders = 0
        read, opened, child = inputs.Folder.read_with_status, inputs.Folder.open, inputs.Folder.open_child
        hashed = FileHasher._hash_opened

        def read_with_status(folder, name, kind):
            self.results.append(f"{folder.path.name}/{name}")
            return read(folder, name, kind)

        def open_folder(cls, *args, **kwargs):
            self.folders += 1
            return opened.__func__(cls, *args, **kwargs)

        def open_child(cls, *args, **kwargs):
            self.folders += 1
            return child.__func__(cls, *args, **kwargs)

        def hash_opened(hasher, key, opener):
            self.hashed.append("/".join(Path(key).parts[-2:]))
            return hashed(hasher, key, opener)

        monkeypatch.setattr(inputs.Folder, "read_with_status", read_with_status)
        monkeypatch.setattr(inputs.Folder, "open", classmethod(open_folder))
        monkeypatch.setattr(inputs.Folder, "open_child", classmethod(open_child))
        monkeypatch.setattr(FileHasher, "_hash_opened", hash_opened)


@pytest.fixture
def repo_data(tmp_path: Path) -> Path:
    """A copy of this repository's own runs, annotations and problems, to edit."""
    data = tmp_path / "repo-data"
    for name in ("runs", "annotations", "problems"):
        shutil.copytree(REPO / name, data / name, symlinks=True)
    return data


def test_rebuilds_through_the_fast_paths_build_what_a_build_from_scratch_builds(
        config_for, repo_data: Path, tmp_path: Path, trust_at_once, monkeypatch):
    out = tmp_path / "site"
    build_site(config_for(repo_data, out))
    runs = sorted(p for p in (repo_data / "runs").iterdir() if (p / "solution.py").is_file())
    edited, old, new = next((p, *_longer_session(p)) for p in runs if _longer_session(p))
    solution_edited = next(p for p in runs if p != edited)
    annotation = min((repo_data / "annotations").glob("*.yaml"))
    _same_size_edit(edited / "result.json", old, new)
    _same_size_edit(solution_edited / "solution.py", "import", "IMPORT")
    summary = annotation.read_text().split("summary:", 1)[1].split()[0]
    _same_size_edit(annotation, "summary: " + summary, "summary: " + summary.swapcase())
    time.sleep(0.02)
    reads = _Reads(monkeypatch)
    report = build_site(config_for(repo_data, out))
    results = sorted(name for name in reads.results if name.endswith("/result.json"))
    # the edit path reads the runs the edit touches and leaves the session time (the runs tables show it) to the
    # full build, which reads again only the edited result.json
    touched = {edited.name, solution_edited.name, annotation.stem}
    assert EDIT_STAGE not in report.timings and "look at the edit" in report.timings
    assert results == sorted([f"{name}/result.json" for name in touched] + [f"{edited.name}/result.json"])
    assert sorted(reads.hashed) == sorted([f"{edited.name}/result.json", f"{solution_edited.name}/solution.py"])
    assert report.rendered >= 3
    assert "IMPORT" in (out / "runs" / solution_edited.name / "index.html").read_text()

    scratch = tmp_path / "scratch"
    monkeypatch.undo()
    build_site(config_for(repo_data, scratch))
    assert _published(out) == _published(scratch)


def _longer_session(run: Path) -> tuple[str, str] | None:
    """A same-size edit of the run's session time (a second longer), if it keeps the number's length."""
    elapsed = json.loads((run / "result.json").read_text())["session"]["elapsed_s"]
    if not isinstance(elapsed, float):
        return None
    old, new = f'"elapsed_s": {elapsed!r}', f'"elapsed_s": {elapsed + 1!r}'
    return (old, new) if len(old) == len(new) else None


def test_unchanged_inputs_end_the_build_before_any_run_folder_is_opened(config_for, deck: Path, tmp_path: Path,
                                                                        trust_at_once, monkeypatch):
    out = tmp_path / "site"
    first = build_site(config_for(deck, out))
    before, published = _inodes(out), _published(out)
    reads = _Reads(monkeypatch)
    again = build_site(config_for(deck, out))
    assert reads.folders == 0 and reads.results == [] and reads.hashed == []
    assert again.rendered == 0 and again.pages == first.pages
    assert [str(d) for d in again.diagnostics] == [str(d) for d in first.diagnostics]
    assert _inodes(out) == before and _published(out) == published  # the same site, not even swapped


def test_a_same_size_edit_with_its_mtime_put_back_is_seen(config_for, deck: Path, tmp_path: Path, trust_at_once):
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    assert build_site(config_for(deck, out)).rendered == 0
    run = min(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file())
    _same_size_edit(run / "solution.py", "tiled kernel launch", "TILED KERNEL LAUNCH")
    text = (run / "result.json").read_text()
    model = json.loads(text)["model"]
    _same_size_edit(run / "result.json", f'"model": "{model}"', f'"model": "{model.upper()}"')
    time.sleep(0.02)
    report = build_site(config_for(deck, out))
    assert report.rendered >= 1
    page = (out / "runs" / run.name / "index.html").read_text()
    assert "TILED KERNEL LAUNCH" in page and model.upper() in page


def test_a_run_folder_swapped_for_a_copy_is_read_again(config_for, deck: Path, tmp_path: Path, trust_at_once):
    """A folder put in another's place, its files copied with their sizes and mtimes, is another folder (device
    and inode): nothing of it is taken from the cache."""
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    run = min(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file())
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)  # copy2: sizes and mtimes kept
    _same_size_edit(copy / "solution.py", "tiled kernel launch", "SWAPPED IN FOLDER!!")
    shutil.rmtree(run)
    os.rename(copy, run)
    time.sleep(0.02)
    build_site(config_for(deck, out))
    assert "SWAPPED IN FOLDER!!" in (out / "runs" / run.name / "index.html").read_text()


def test_the_record_vouches_only_for_plain_files_and_folders_changed_before_it(tmp_path: Path, monkeypatch):
    root = tmp_path / "inputs"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("one")
    context = ("test",)
    fresh = snapshot.take([root], [], context)
    assert fresh.certain and not fresh.trusted()  # written a moment ago: within the margin
    monkeypatch.setattr(snapshot, "RACY_MARGIN_NS", 0)
    time.sleep(0.02)
    record = snapshot.take([root], [], context)
    assert record.trusted() and record.same_inputs(snapshot.take([root], [], context))
    _same_size_edit(root / "a" / "f.txt", "one", "two")
    assert not record.same_inputs(snapshot.take([root], [], context))  # the ctime moved
    (root / "link").symlink_to(root / "a")
    assert not snapshot.take([root], [], context).certain


def test_rebuilds_seeded_from_the_spare_site_build_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path):
    """The site a swap retires is kept and brought up to date as the next build's staging folder (only what the
    site in place wrote is linked again): edits, a run added and a run removed, each rebuild compared with a build
    from scratch of the same data."""
    out = tmp_path / "site"
    spare = output.spare_dir(out)
    build_site(config_for(deck, out))
    roots = [out.stat().st_ino]
    runs = sorted(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file())
    annotation = min((deck / "annotations").glob("*.yaml"))

    def edit_annotation():
        annotation.write_text(annotation.read_text().replace("summary: ", "summary: Edited. ", 1))

    def edit_solution():
        (runs[0] / "solution.py").write_text((runs[0] / "solution.py").read_text() + "\n# edited\n")

    def add_run():
        shutil.copytree(runs[1], deck / "runs" / "added", copy_function=shutil.copy)
        result = json.loads((deck / "runs" / "added" / "result.json").read_text())
        result["run_id"] = "added"
        (deck / "runs" / "added" / "result.json").write_text(json.dumps(result))

    def remove_run():
        shutil.rmtree(runs[2])

    for step, change in enumerate((edit_annotation, edit_solution, add_run, edit_annotation, remove_run)):
        change()
        report = build_site(config_for(deck, out))
        assert 0 < report.rendered < report.pages
        roots.append(out.stat().st_ino)
        scratch = tmp_path / f"scratch-{step}"
        build_site(config_for(deck, scratch))
        assert _published(out) == _published(scratch), change.__name__
        assert spare.is_dir()
    # from the third build on, each build's folder is the site retired two builds before (nothing copied whole)
    assert roots[2:] == [roots[0], roots[1]] * 2


def test_a_spare_site_the_records_do_not_vouch_for_is_not_used(config_for, deck: Path, tmp_path: Path):
    out = tmp_path / "site"
    for _ in range(2):
        annotation = min((deck / "annotations").glob("*.yaml"))
        annotation.write_text(annotation.read_text().replace("summary: ", "summary: Edited. ", 1))
        build_site(config_for(deck, out))
    spare = output.spare_dir(out)
    spare_root = spare.stat().st_ino
    (spare / output.SITE_RECORD).write_text("{}")
    annotation.write_text(annotation.read_text().replace("summary: ", "summary: Again. ", 1))
    build_site(config_for(deck, out))
    assert out.stat().st_ino != spare_root, "a spare of unknown origin was deleted, not built into"
    scratch = tmp_path / "scratch"
    build_site(config_for(deck, scratch))
    assert _published(out) == _published(scratch)


def test_a_site_record_copied_into_another_tree_is_not_believed(config_for, deck: Path, tmp_path: Path):
    """A build of older code seeds its staging folder with the whole previous site, the record of the previous
    site included: that record describes another tree, so the spare is not brought up to date from it."""
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    record = output.SiteRecord.load(out)
    assert record is not None
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    assert output.SiteRecord.load(copy) is None


def test_a_watching_build_keeps_unchanged_runs_unread_and_builds_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """A watching build takes the run and annotation records, run views and run pages of its previous build for
    the folders its file-system record shows unchanged; every rebuild publishes what a build from scratch of the
    same data publishes, and reports the same."""
    from kernelbench.sitegen.buildcache import WarmState

    out, warm = tmp_path / "site", WarmState()
    build_site(config_for(deck, out), warm)
    annotation = min((deck / "annotations").glob("*.yaml"))
    quoted = deck / "runs" / annotation.stem / "solution.py"
    runs = sorted(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file() and p != quoted.parent)

    def edit_annotation():
        annotation.write_text(annotation.read_text().replace("summary: ", "summary: Edited. ", 1))

    def edit_quoted_file():  # the annotation, unchanged, no longer matches its run's file
        quoted.write_text(quoted.read_text().replace("tiled kernel launch", "TILED KERNEL LAUNCH"))

    def same_size_edit():
        _same_size_edit(runs[0] / "solution.py", "tiled kernel launch", "TILED KERNEL LAUNCH")

    def add_run():
        shutil.copytree(runs[1], deck / "runs" / "added")
        result = json.loads((deck / "runs" / "added" / "result.json").read_text())
        (deck / "runs" / "added" / "result.json").write_text(json.dumps({**result, "run_id": "added"}))

    def remove_run():
        shutil.rmtree(runs[2])

    changes = (edit_annotation, edit_quoted_file, same_size_edit, add_run, remove_run, edit_annotation)
    reached = {edit_annotation: quoted.parent.name, edit_quoted_file: quoted.parent.name,
               same_size_edit: runs[0].name, add_run: "added"}
    since_full: set[str] = set()  # the run folders changed since the last rebuild that planned the whole deck
    for step, change in enumerate(changes):
        change()
        time.sleep(0.02)
        with pytest.MonkeyPatch.context() as patch:
            reads = _Reads(patch)
            report = build_site(config_for(deck, out), warm)
        # runs/ and the run folders changed since the last full rebuild are opened (an edit the edit path took is
        # read again by the next full rebuild), twice where the edit path read them and left them to the full build
        since_full |= {reached[change]} if change in reached else set()
        refused = "look at the edit" in report.timings and EDIT_STAGE not in report.timings
        limit = (1 + len(since_full)) * (2 if refused else 1)
        assert reads.folders <= limit, f"{change.__name__}: only runs/ and the changed run folders are opened"
        if EDIT_STAGE not in report.timings:
            since_full = set()
        scratch = tmp_path / f"scratch-{step}"
        fresh = build_site(config_for(deck, scratch))
        assert _published(out) == _published(scratch), change.__name__
        assert [str(d) for d in report.diagnostics] == [str(d) for d in fresh.diagnostics], change.__name__
    assert any("quote" in str(d) for d in report.diagnostics)


EDIT_STAGE = "load and plan the edit"  # the stage a rebuild that plans only the edited runs' pages reports


def test_a_command_after_an_edit_reads_and_plans_only_the_edited_runs_and_builds_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """A new `python build.py` after an edit inside a run folder or of an annotation loads only the runs the edit
    touches (keptplan.py) when nothing another page shows moved, and leaves every other edit to the full build;
    either way it publishes and reports what a build from scratch of the same data does."""
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    annotations = sorted((deck / "annotations").glob("*.yaml"))
    clean = next(p for p in annotations if "verdict: clean" in p.read_text())
    audited = next(p for p in annotations if "verdict: rubric_leak" in p.read_text())
    quoted = deck / "runs" / clean.stem / "solution.py"
    annotated = {p.stem for p in annotations}
    runs = sorted(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file() and p.name not in annotated)

    def edit_clean_summary():
        clean.write_text(clean.read_text().replace("summary: ", "summary: Edited. ", 1))

    def edit_solution():
        (runs[0] / "solution.py").write_text((runs[0] / "solution.py").read_text() + "\n# edited\n")

    def same_size_edit_of_the_transcript():
        transcript = runs[1] / "transcript.jsonl"
        text = transcript.read_text()
        _same_size_edit(transcript, text[-40:], text[-40:].swapcase())

    def edit_a_quoted_file_keeping_its_quote():  # the quoted lines are untouched: the annotation reports the same
        quoted.write_text(quoted.read_text() + "\n# edited below the quoted lines\n")

    def break_a_quote():  # the annotation now reports a mismatch, which every leaderboard lists
        quoted.write_text(quoted.read_text().replace("tiled kernel launch", "TILED KERNEL LAUNCH"))

    def edit_an_audited_summary():  # the audits page shows this summary
        audited.write_text(audited.read_text().replace("summary: ", "summary: Edited. ", 1))

    def change_a_verdict():
        clean.write_text(clean.read_text().replace("verdict: clean", "verdict: interesting\nimplication: Edited.", 1))

    def edit_a_result():
        path = runs[2] / "result.json"
        path.write_text(path.read_text().replace('"trial": 1', '"trial": 7', 1))

    def edit_what_only_its_run_page_shows():  # the grading's own time, when the run finished (runs table: no)
        _edit_result(runs[3], lambda result: (result["grading"].update(elapsed_s=12.5),
                                              result.update(finished="2026-05-03T01:02:03Z")))

    def edit_what_only_an_annotated_runs_page_shows():  # its annotation is read again, its quotes checked
        _edit_result(quoted.parent, lambda result: result["environment"].update(host="edited-host"))

    def edit_a_session_time():  # the time column of the runs tables, the boards' efficiency chart
        _edit_result(runs[3], lambda result: result["session"].update(elapsed_s=result["session"]["elapsed_s"] + 60))

    def edit_recorded_baselines():  # in no run view: the boards' speed-ups and the problem pages' baseline lines
        _edit_result(runs[4], lambda result: result["grading"]["baselines"].update(eager=0.07))

    def name_the_gpu():  # in no run view: the title of its board
        _edit_result(runs[3], lambda result: result["environment"].update(gpu_name="NVIDIA H100 80GB HBM3"))

    alone = (edit_clean_summary, edit_solution, same_size_edit_of_the_transcript,
             edit_a_quoted_file_keeping_its_quote, edit_what_only_its_run_page_shows,
             edit_what_only_an_annotated_runs_page_shows)
    changes = (*alone, break_a_quote, edit_an_audited_summary, change_a_verdict, edit_a_result,
               edit_a_session_time, edit_recorded_baselines, name_the_gpu, edit_clean_summary)
    for step, change in enumerate(changes):
        change()
        time.sleep(0.02)
        with pytest.MonkeyPatch.context() as patch:
            reads = _Reads(patch)
            report = build_site(config_for(deck, out))
        took_edit_path = EDIT_STAGE in report.timings
        assert took_edit_path == (change in alone or step == len(changes) - 1), (step, change.__name__)
        if took_edit_path:
            assert reads.folders <= 2, f"{change.__name__}: runs/ and the edited run's folder are opened"
            assert report.rendered == 1, change.__name__
        scratch = tmp_path / f"scratch-{step}"
        fresh = build_site(config_for(deck, scratch))
        assert _published(out) == _published(scratch), change.__name__
        assert sorted(map(str, report.diagnostics)) == sorted(map(str, fresh.diagnostics)), change.__name__
        again = build_site(config_for(deck, out))
        assert again.rendered == 0 and sorted(map(str, again.diagnostics)) == sorted(map(str, fresh.diagnostics))
    assert any("quote" in str(d) for d in report.diagnostics)


def test_the_manifest_an_earlier_build_wrote_is_not_published_again(config_for, deck: Path, tmp_path: Path,
                                                                    trust_at_once):
    """Earlier builds kept the manifest as JSON (`.kernelbench-manifest.json`); a site swapped in by a build of this
    code holds only this code's manifest, whether it was built in full or through the edit path, and a build that
    can read no manifest of its own builds what a build from scratch builds."""
    from kernelbench.sitegen.manifest import LEGACY_MANIFEST_NAMES, Manifest

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    legacy = out / LEGACY_MANIFEST_NAMES[0]
    legacy.write_text("{}")
    run = min(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file())
    (run / "solution.py").write_text((run / "solution.py").read_text() + "\n# edited\n")
    time.sleep(0.02)
    report = build_site(config_for(deck, out))
    assert EDIT_STAGE in report.timings and not legacy.exists() and (out / MANIFEST_NAME).is_file()
    assert Manifest.load(out).pages.keys() == set(report_pages(out))
    (out / MANIFEST_NAME).write_bytes(b"{}")  # a manifest this code cannot read: every page rendered again
    legacy.write_text("{}")
    (run / "solution.py").write_text((run / "solution.py").read_text() + "# again\n")
    time.sleep(0.02)
    report = build_site(config_for(deck, out))
    assert EDIT_STAGE not in report.timings and report.rendered == report.pages and not legacy.exists()
    build_site(config_for(deck, tmp_path / "scratch"))
    assert _published(out) == _published(tmp_path / "scratch")


def report_pages(site: Path) -> list[str]:
    """The pages a site's record lists (snapshot.Outcome)."""
    kept = snapshot.load(site / CACHE_DIR / snapshot.SNAPSHOT_FILE)
    assert kept is not None
    return kept[1].files[1:1 + kept[1].pages]


def _edit_result(run: Path, change) -> None:
    path = run / "result.json"
    result = json.loads(path.read_text())
    change(result)
    path.write_text(json.dumps(result, indent=1))


def test_a_plan_that_does_not_go_with_the_record_in_place_is_not_used(config_for, deck: Path, tmp_path: Path,
                                                                       trust_at_once):
    """The kept plan is believed only beside the file-system record it was written with (a build of older code
    seeds the previous site's plan into its own and writes a new record)."""
    from kernelbench.sitegen import keptplan

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    plan = keptplan.KeptPlan.load(out)
    assert plan is not None and plan.runs and plan.annotations
    plan.taken_ns -= 1
    plan.save(out)
    run = min(p for p in (deck / "runs").iterdir() if (p / "solution.py").is_file())
    (run / "solution.py").write_text((run / "solution.py").read_text() + "\n# edited\n")
    time.sleep(0.02)
    report = build_site(config_for(deck, out))
    assert EDIT_STAGE not in report.timings and "load and plan" in report.timings
    assert "# edited" in (out / "runs" / run.name / "index.html").read_text()


def test_a_watching_build_takes_the_edit_path_and_builds_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """`python build.py --watch`: the watcher sees an annotation edited and its rebuild reads and plans only that
    run's page, which is the one page that changes; a change the edit path leaves to the full build (a verdict) is
    built in full by the same process, and the next edit takes the edit path again. Every rebuild publishes what a
    build from scratch of the same data publishes."""
    import queue

    from kernelbench.sitegen import server

    out = tmp_path / "site"
    config = config_for(deck, out)
    reports: queue.Queue = queue.Queue()
    rebuilder = server.Rebuilder(config, server.BuildState(), lambda report, strict: reports.put(report))
    assert rebuilder.rebuild()
    reports.get_nowait()
    annotations = sorted((deck / "annotations").glob("*.yaml"))
    clean = next(p for p in annotations if "verdict: clean" in p.read_text())

    def edit_summary(path: Path) -> None:
        path.write_text(path.read_text().replace("summary: ", "summary: Edited. ", 1))

    def change_verdict(path: Path) -> None:
        path.write_text(path.read_text().replace("verdict: clean", "verdict: interesting\nimplication: Edited.", 1))

    def next_rebuild():
        """The next rebuild that found a change (on a loaded machine an editor's write may reach the watcher as events
        further apart than the debounce: the second rebuild finds nothing changed)."""
        while True:
            report = reports.get(timeout=30)
            if list(report.timings) != ["look at the inputs"]:
                return report

    watchers = server.start_watching(config, rebuilder)
    try:
        time.sleep(0.3)  # the observer's watches are in place
        for step, (change, path, edit_path) in enumerate(
                ((edit_summary, clean, True), (change_verdict, clean, False), (edit_summary, clean, True))):
            before = _published(out)
            change(path)
            report = next_rebuild()
            assert (EDIT_STAGE in report.timings) == edit_path, (step, report.timings)
            after = _published(out)
            changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
            if edit_path:
                assert changed == {f"runs/{path.stem}/index.html"} and report.rendered == 1, step
            else:
                assert f"runs/{path.stem}/index.html" in changed and len(changed) > 1, step
            fresh = build_site(config_for(deck, tmp_path / f"scratch-{step}"))
            assert after == _published(tmp_path / f"scratch-{step}"), step
            assert sorted(map(str, report.diagnostics)) == sorted(map(str, fresh.diagnostics)), step
            time.sleep(0.02)
    finally:
        watchers.stop()


class _RunPagesPlanned:
    """The runs whose pages a build plans (plan.run_page)."""

    def __init__(self, patch: pytest.MonkeyPatch):
        from kernelbench.sitegen import plan

        self.runs: list[str] = []
        run_page = plan.run_page

        def spied(data, record, *args):
            self.runs.append(record.run_id)
            return run_page(data, record, *args)

        patch.setattr(plan, "run_page", spied)


class _TablesMade:
    """The runs tables' kept rows (render.TableRows) each build of a command loads."""

    def __init__(self, patch: pytest.MonkeyPatch):
        from kernelbench.sitegen.render import TableRows

        self.made: list = []
        load = TableRows.load

        def spied(rows, *args):
            self.made.append(rows)
            return load(rows, *args)

        patch.setattr(TableRows, "load", spied)


def test_a_result_edit_that_moves_the_runs_tables_hashes_only_that_file_and_builds_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """A result.json edit that changes its run's row in every runs table (the runs index, its problem's and its
    agent's pages) plans the whole deck again: every other run page's files are taken by their status alone (one
    status per file: plan.py, `_shown_with_status`), only the edited file is hashed, only the edited run's rows are
    rendered (the others taken as the previous build kept them: render.TableRows), and the site is what a build from
    scratch of the same data builds."""
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    run = _runs_of(deck)[0]
    runs_index = (out / "runs/index.html").stat().st_ino
    _edit_result(run, lambda result: (result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 61,
                                                               cost_usd=None),
                                      result["session"]["tokens"].update(input=123_457)))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(patch)
        tables = _TablesMade(patch)
        planned = _RunPagesPlanned(patch)
        report = build_site(config_for(deck, out))
    assert EDIT_STAGE not in report.timings  # the whole deck planned
    assert reads.hashed == [f"{run.name}/result.json"]
    [rows] = tables.made
    assert rows.rendered == 3  # the edited run's row in the runs index and on its problem's and agent's pages
    assert planned.runs == [run.name]  # every other run page taken as the previous build left it
    assert report.rendered >= 4  # its run page, the runs index, its problem's and its agent's pages at least
    assert (out / "runs/index.html").stat().st_ino != runs_index  # written again
    scratch = tmp_path / "scratch"
    fresh = build_site(config_for(deck, scratch))
    assert _published(out) == _published(scratch)
    assert sorted(map(str, report.diagnostics)) == sorted(map(str, fresh.diagnostics))
    kept, built = Manifest.load(out), Manifest.load(scratch)
    assert kept.pages == built.pages and dict(kept.file_hashes) == dict(built.file_hashes)

    # a run page gone from the site: planned and written again, the others still taken
    other = _runs_of(deck)[1]
    for site in (out, *out.parent.glob(f".spare-{out.name}*")):  # nor in the spare site the next build starts from
        (site / "runs" / other.name / "index.html").unlink(missing_ok=True)
    _edit_result(run, lambda result: result["session"].update(elapsed_s=result["session"]["elapsed_s"] + 60))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        planned = _RunPagesPlanned(patch)
        build_site(config_for(deck, out))
    build_site(config_for(deck, scratch))
    assert sorted(planned.runs) == sorted([run.name, other.name])
    assert _published(out) == _published(scratch)
    kept, built = Manifest.load(out), Manifest.load(scratch)
    assert kept.pages == built.pages and dict(kept.file_hashes) == dict(built.file_hashes)


class _FoldersOpened:
    """The run folders a build's load opens (inputs.Folder.open_child under runs/), and those it opens later for a
    run it took unopened (inputs.Folder.reopen, RunRecord.folder)."""

    def __init__(self, patch: pytest.MonkeyPatch):
        self.loaded: list[str] = []
        self.later: list[str] = []
        child, reopen = inputs.Folder.open_child, inputs.Folder.reopen

        def open_child(cls, parent, name, root):
            if parent.path.name == "runs":
                self.loaded.append(name)
            return child.__func__(cls, parent, name, root)

        def reopened(cls, path, real, identity):
            self.later.append(Path(path).name)
            return reopen.__func__(cls, path, real, identity)

        patch.setattr(inputs.Folder, "open_child", classmethod(open_child))
        patch.setattr(inputs.Folder, "reopen", classmethod(reopened))


class _ViewsHashed:
    """The runs whose views a build hashes (plan.hash_data of a run view)."""

    def __init__(self, patch: pytest.MonkeyPatch):
        from kernelbench.sitegen import plan

        self.runs: list[str] = []
        hash_data = plan.hash_data

        def spied(data):
            if isinstance(data, dict) and "unaudited" in data and "run_id" in data:
                self.runs.append(data["run_id"])
            return hash_data(data)

        patch.setattr(plan, "hash_data", spied)


def _runs_of(deck: Path) -> list[Path]:
    return sorted(p for p in (deck / "runs").iterdir() if (p / "result.json").is_file())


def _same_as_scratch(out: Path, scratch: Path, config_for, deck: Path, report) -> None:
    fresh = build_site(config_for(deck, scratch))
    assert _published(out) == _published(scratch)
    assert sorted(map(str, report.diagnostics)) == sorted(map(str, fresh.diagnostics))
    kept, built = Manifest.load(out), Manifest.load(scratch)
    assert kept.pages == built.pages and dict(kept.file_hashes) == dict(built.file_hashes)


def test_a_board_moving_edit_opens_only_the_edited_run_folder_and_builds_what_a_build_from_scratch_builds(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """A result.json edit that moves the boards loads the whole deck, but takes every run folder the file-system
    record shows unchanged from the parse cache without opening it (results.dataset.KeptInputs.unopened): only the
    edited run's folder is opened by the load, the others only where a check reads their files (an annotation's
    quotes); the site, its report and its manifest are those of a build from scratch."""
    out = tmp_path / "site"
    build_site(config_for(deck, out))
    runs = _runs_of(deck)
    run = runs[1]
    _edit_result(run, lambda result: result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 61))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        opened = _FoldersOpened(patch)
        planned = _RunPagesPlanned(patch)
        hashed = _ViewsHashed(patch)
        report = build_site(config_for(deck, out))
    assert EDIT_STAGE not in report.timings  # the whole deck planned
    assert set(opened.loaded) == {run.name}  # (by the edit's own look at it too: keptplan.plan_pages)
    # the run views whose result and key are those the previous plan kept take its digests (plan._kept_run_view)
    assert hashed.runs == [run.name]  # (no other run's cell mark moved here)
    annotated = {p.stem for p in (deck / "annotations").glob("*.yaml")}
    assert set(opened.later) <= annotated | {run.name}
    assert planned.runs == [run.name]
    _same_as_scratch(out, tmp_path / "scratch", config_for, deck, report)

    # a second edit of another run: the run edited before is taken unopened now
    other = runs[2]
    _edit_result(other, lambda result: result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 7))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        opened = _FoldersOpened(patch)
        report = build_site(config_for(deck, out))
    assert set(opened.loaded) == {other.name}
    _same_as_scratch(out, tmp_path / "scratch", config_for, deck, report)


def test_a_corrupt_or_stale_parse_cache_falls_back_to_opening_the_run_folders(
        config_for, deck: Path, tmp_path: Path, trust_at_once):
    """The runs taken unopened come from the parse cache, and only at the very status its value was read with: a
    cache that cannot be read, or one an older build left (a run's result.json changed since), has every such run
    (or that run) loaded from its folder as before, and the site is what a build from scratch builds."""
    from kernelbench.sitegen.buildcache import parse_cache_path

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    runs = _runs_of(deck)
    older = tmp_path / "older-cache"
    shutil.copyfile(parse_cache_path(out), older)

    # stale: the cache of the build before run A's edit, put back after the build that read the edit
    a, b, c = runs[0], runs[3], runs[4]
    _edit_result(a, lambda result: result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 30))
    time.sleep(0.02)
    build_site(config_for(deck, out))
    cache = parse_cache_path(out)
    cache.unlink()
    shutil.copyfile(older, cache)
    _edit_result(b, lambda result: result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 30))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        opened = _FoldersOpened(patch)
        report = build_site(config_for(deck, out))
    assert set(opened.loaded) == {a.name, b.name}  # A's cached value is not the file's now
    _same_as_scratch(out, tmp_path / "scratch", config_for, deck, report)

    # corrupt: every run loaded from its folder
    cache = parse_cache_path(out)
    data = cache.read_bytes()
    cache.unlink()
    cache.write_bytes(data[: len(data) // 2] + b"\x00garbage")
    _edit_result(c, lambda result: result["session"].update(elapsed_s=(result["session"]["elapsed_s"] or 0) + 30))
    time.sleep(0.02)
    with pytest.MonkeyPatch.context() as patch:
        opened = _FoldersOpened(patch)
        report = build_site(config_for(deck, out))
    assert set(opened.loaded) == {p.name for p in runs}
    _same_as_scratch(out, tmp_path / "scratch", config_for, deck, report)


def test_a_run_folder_taken_unopened_and_swapped_since_is_opened_as_a_load_opens_it(
        config_for, deck: Path, tmp_path: Path, trust_at_once, monkeypatch):
    """A run the load took unopened whose folder is then swapped (between the file-system record and the page
    that reads its files) is not read through another folder by its old identity: RunRecord.folder opens what is
    there now through the input policy."""
    from kernelbench.results.dataset import RunRecord

    out = tmp_path / "site"
    build_site(config_for(deck, out))
    run = _runs_of(deck)[5]
    record = dataset.load_dataset(deck).runs[run.name]
    taken = RunRecord(run_id=run.name, path=record.path, result=None, result_path=record.result_path,
                      compact=None, unopened=(record.folder.identity, record.path.parent.parent, record.folder.real_text))
    copy = run.with_name(run.name + ".copy")
    shutil.copytree(run, copy)
    shutil.rmtree(run)
    copy.rename(run)
    folder = taken.folder
    assert folder.identity != record.folder.identity and folder.identity == inputs._identity(os.stat(run))
    assert taken.opened_folder() is folder
