"""The site a build writes, byte for byte, against the digests of the site the same deck gave when they were
recorded (tests/site/data/site_digests.json): work on the build's speed must not change a byte it publishes.

The deck is the synthetic one with its clock fixed (every transcript time comes from a counter) and one rich
transcript more (long outputs cut into blobs, diffs, multi-line scripts, thinking, a subagent-free session long
enough for chunk files), so every path of the viewer is in the site. A change to what the site shows is expected
to change the digests: record them again with

    KERNELBENCH_RECORD_SITE_DIGESTS=1 python -m pytest tests/site/test_same_site.py

and say in the commit why the site changed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import pytest

from kernelbench.sitegen.buildcache import CACHE_DIR
from kernelbench.sitegen.manifest import MANIFEST_NAME
from kernelbench.sitegen.pipeline import BuildConfig, build_site
from tests.support.synthetic import write_deck

DIGESTS = Path(__file__).parent / "data" / "site_digests.json"
RECORD = os.environ.get("KERNELBENCH_RECORD_SITE_DIGESTS") == "1"


def _write_rich_transcript(path: Path) -> None:
    from kernelbench.transcripts.normalized import NormalizedWriter

    with NormalizedWriter(path, harness="claude", model="claude-opus-4-7", session_id="rich", cwd="/work") as log:
        for step in range(160):
            log.user(f"Prompt {step} <b>bold</b> & \"quoted\" 'single'\r\nsecond line")
            log.thinking(f"Thinking about step {step}. " * (step % 9 + 1))
            log.assistant(f"Step {step}: " + "word " * (step * 7 % 300))
            script = "set -e\ncd /work/kernels\nfor f in *.cu; do\n  nvcc -O3 \"$f\" && echo ok $f\ndone\n"
            call = log.tool_call("Bash", {"command": script if step % 4 == 0 else f"ls -la /work/{step}",
                                          "timeout": 120, "description": "build"})
            long_output = "".join(f"line {i}: value={i * step} <tag>\n" for i in range(40 + step * 3))
            log.tool_result(call, long_output, is_error=step % 11 == 0, exit_code=1 if step % 11 == 0 else 0)
            if step % 5 == 0:
                diff = "".join(f"-old line {i}\n+new line {i} & <x>\n" for i in range(step % 30 + 1))
                log.file_edit(f"/work/kernels/k{step}.cu",
                              f"--- a/k{step}.cu\n+++ b/k{step}.cu\n@@ -1,{step} +1,{step} @@\n{diff}")
            if step % 7 == 0:
                call = log.tool_call("Read", {"file_path": f"/work/kernels/k{step}.cu"})
                log.tool_result(call, "x" * (7000 + step))
            if step % 13 == 0:
                log.system(f"Context notice {step}\n" + "detail " * 50)
            log.usage(input=1000 + step, output=200 + step, cache_read=step * 10)


@pytest.fixture(scope="module")
def fixed_deck(tmp_path_factory) -> Path:
    """The synthetic deck, written with the transcripts' clock fixed, and one long rich transcript."""
    from kernelbench.transcripts import normalized

    root = tmp_path_factory.mktemp("fixed-deck")
    ticks = itertools.count()
    real_time = normalized.time

    class FixedClock:
        @staticmethod
        def time() -> float:
            return 1_777_000_000.0 + 0.25 * next(ticks)

    normalized.time = FixedClock  # type: ignore[assignment]
    try:
        deck = write_deck(root, n_runs=16, transcript_bytes=6000, annotate_every=3)
        _write_rich_transcript(root / "runs" / deck.run_ids[3] / "transcript.jsonl")
    finally:
        normalized.time = real_time
    return root


def _published(site: Path) -> dict[str, str]:
    """Every file the site publishes (not the build's own bookkeeping) → its sha256; leaderboard.json without the
    time it was built."""
    found = {}
    for path in sorted(site.rglob("*")):
        name = path.relative_to(site).as_posix()
        if not path.is_file() or name == MANIFEST_NAME or name.startswith(CACHE_DIR + "/"):
            continue
        data = path.read_bytes()
        if name == "data/leaderboard.json":
            payload = json.loads(data)
            payload.pop("generated", None)
            data = json.dumps(payload, sort_keys=True).encode()
        found[name] = hashlib.sha256(data).hexdigest()
    return found


def _without_machine_paths(digests: dict[str, str], site: Path) -> dict[str, str]:
    return {name: digest for name, digest in digests.items() if str(site) not in name}


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_site_is_byte_for_byte_the_recorded_one(fixed_deck: Path, tmp_path: Path, jobs: int):
    out = tmp_path / "site"
    report = build_site(BuildConfig(data_dir=fixed_deck, out_dir=out, jobs=jobs))
    assert report.rendered == report.pages
    found = _without_machine_paths(_published(out), out)
    if RECORD and jobs == 1:
        DIGESTS.parent.mkdir(parents=True, exist_ok=True)
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(DIGESTS.read_text())
    assert sorted(found) == sorted(recorded), "the site has other files than the recorded one"
    changed = sorted(name for name in found if found[name] != recorded[name])
    assert not changed, f"these files differ from the recorded site: {changed[:20]}"


def test_a_rebuild_after_an_annotation_edit_gives_the_site_a_fresh_build_gives(fixed_deck: Path, tmp_path: Path):
    """The incremental path (only the pages the edit affects rendered again) ends where a build from scratch of
    the edited deck ends."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(fixed_deck, data)
    out, fresh = tmp_path / "site", tmp_path / "fresh"
    build_site(BuildConfig(data_dir=data, out_dir=out, jobs=2))
    annotation = sorted((data / "annotations").glob("*.yaml"))[1]
    annotation.write_text(annotation.read_text().replace("summary: ", "summary: Edited. ", 1))
    again = build_site(BuildConfig(data_dir=data, out_dir=out, jobs=2))
    assert 0 < again.rendered < again.pages
    build_site(BuildConfig(data_dir=data, out_dir=fresh, jobs=1))
    assert _published(out) == _published(fresh)


@pytest.mark.parametrize("edited", ["annotation", "solution.py", "transcript"])
def test_a_rebuild_that_plans_only_the_edited_run_gives_the_site_a_fresh_build_gives(fixed_deck: Path, tmp_path: Path,
                                                                                     monkeypatch, edited: str):
    """One file edited (an annotation, a run's solution, the long transcript): the rebuild reads and plans only the
    edited run (keptplan.py: the file-system record trusted at once, as it is two seconds after the inputs last
    changed) and ends where a build from scratch of the edited deck ends."""
    import shutil
    import time

    from kernelbench.results import dataset
    from kernelbench.sitegen import snapshot
    from kernelbench.sitegen.manifest import FileHasher

    for module in (snapshot, dataset, FileHasher):
        monkeypatch.setattr(module, "RACY_MARGIN_NS", 0)
    data = tmp_path / "data"
    shutil.copytree(fixed_deck, data)
    out, fresh = tmp_path / "site", tmp_path / "fresh"
    time.sleep(0.02)
    build_site(BuildConfig(data_dir=data, out_dir=out, jobs=2))
    annotation = min((data / "annotations").glob("*.yaml"))
    run = data / "runs" / (annotation.stem if edited != "transcript" else sorted((data / "runs").iterdir())[3].name)
    if edited == "annotation":
        annotation.write_text(annotation.read_text().replace("summary: ", "summary: Edited. ", 1))
    elif edited == "solution.py":
        (run / "solution.py").write_text((run / "solution.py").read_text() + "\n# edited <b>&amp;</b>\n")
    else:
        lines = (run / "transcript.jsonl").read_text().splitlines(keepends=True)
        (run / "transcript.jsonl").write_text("".join(lines[: len(lines) // 2]))
    time.sleep(0.02)
    again = build_site(BuildConfig(data_dir=data, out_dir=out, jobs=2))
    assert "load and plan the edit" in again.timings and again.rendered == 1
    build_site(BuildConfig(data_dir=data, out_dir=fresh, jobs=1))
    assert _published(out) == _published(fresh)
