"""Watch mode over a large runs folder: past INOTIFY_RUN_FOLDERS run folders, runs/ is polled folder by folder (a
burst of new runs overflowed inotify's queue at 10,000 folders); a new run or a file replaced in a run folder
schedules a rebuild, and nothing else does."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from kernelbench.fileio import atomic_write_text
from kernelbench.sitegen import server


def _runs(root: Path, count: int) -> Path:
    runs = root / "runs"
    for index in range(count):
        folder = runs / f"run_{index:05d}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text("{}")
    return runs


class _Calls:
    def __init__(self):
        self.count, self.event = 0, threading.Event()

    def __call__(self):
        self.count += 1
        self.event.set()

    def wait(self, seconds: float = 5.0) -> bool:
        fired = self.event.wait(seconds)
        self.event.clear()
        return fired


def test_a_new_run_and_a_replaced_result_are_seen_and_quiet_is_quiet(tmp_path: Path):
    runs = _runs(tmp_path, 50)
    calls = _Calls()
    poller = server.RunFolderPoller(runs, calls, interval=0.05).start()
    try:
        assert not calls.wait(0.3)  # nothing changed: no rebuild
        atomic_write_text(runs / "run_00007" / "result.json", '{"edited": true}')  # a writer's rename
        assert calls.wait()
        staging = runs / ".tmp-new-run"
        staging.mkdir()
        (staging / "result.json").write_text("{}")
        os.rename(staging, runs / "run_new")  # a run published
        assert calls.wait()
        assert not calls.wait(0.3)
    finally:
        poller.stop()


def test_the_watcher_polls_runs_only_past_the_threshold(tmp_path: Path, monkeypatch):
    runs = _runs(tmp_path / "data", 5)
    (tmp_path / "data" / "annotations").mkdir()
    config = server.BuildConfig(data_dir=tmp_path / "data", out_dir=tmp_path / "site")
    calls = _Calls()

    class Rebuilder:
        schedule = calls

    for threshold, polled in ((10, False), (3, True)):
        monkeypatch.setattr(server, "INOTIFY_RUN_FOLDERS", threshold)
        watchers = server.start_watching(config, Rebuilder())  # type: ignore[arg-type]
        try:
            assert any(isinstance(w, server.RunFolderPoller) for w in watchers.watchers) == polled
            time.sleep(0.3)
            calls.wait(0)
            atomic_write_text(runs / "run_00002" / "result.json", '{"edited": true}')
            assert calls.wait(6.0), f"no rebuild scheduled (polled={polled})"
        finally:
            watchers.stop()
