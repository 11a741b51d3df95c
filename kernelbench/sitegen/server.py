"""The authoring loop: serve the site on 127.0.0.1, rebuild on input changes, reload the open page.

The server reads whatever site is in place; a rebuild swaps a complete new site in atomically, so a request
never sees half a build, and a failed rebuild leaves the previous site being served. Pages get a tiny polling
script injected at serve time only (the files on disk are the same as a plain build's).
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from kernelbench.errors import KernelBenchError
from kernelbench.sitegen.buildcache import WarmState
from kernelbench.sitegen.pipeline import BuildConfig, BuildReport, build_site

BUILD_ID_PATH = "/__kernelbench/build-id"
DEBOUNCE_S = 0.1  # an editor's save (write a temporary file, rename it) takes milliseconds
# Above this many run folders, runs/ is polled folder by folder instead of watched with one inotify watch per
# folder: at 10,000 folders a burst of new runs overflows inotify's event queue, and the watcher then spent minutes
# re-adding a watch for every folder (benchmarks/results/site_build_speed.md) instead of letting the build look.
INOTIFY_RUN_FOLDERS = 2000
POLL_S = 1.0
RELOAD_SCRIPT = b"""<script>/* live reload: injected by `python build.py --serve` only */
(function () {
  var seen = null;
  function poll() {
    fetch("%s", {cache: "no-store"}).then(function (r) { return r.text(); }).then(function (id) {
      if (seen !== null && id !== seen) { location.reload(); return; }
      seen = id; setTimeout(poll, 500);
    }).catch(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
</script>""" % BUILD_ID_PATH.encode()


class BuildState:
    """The id of the site currently in place; it changes only after a successful swap."""

    def __init__(self):
        self.build_id = 0
        self.lock = threading.Lock()

    def bump(self) -> None:
        with self.lock:
            self.build_id += 1


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    state: BuildState

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        if self.path.split("?")[0] == BUILD_ID_PATH:
            self._send(200, str(self.state.build_id).encode(), "text/plain")
            return
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix == ".html" and path.is_file():
            self._send(200, inject_reload(path.read_bytes()), "text/html; charset=utf-8")
            return
        super().do_GET()

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - keep the console for build output
        pass


def inject_reload(html: bytes) -> bytes:
    at = html.rfind(b"</body>")
    return html + RELOAD_SCRIPT if at < 0 else html[:at] + RELOAD_SCRIPT + html[at:]


def make_server(out_dir: Path, state: BuildState, port: int) -> http.server.ThreadingHTTPServer:
    handler = type("BoundSiteHandler", (SiteHandler,), {"state": state})
    # the directory is given as a path string, so each request resolves it again and follows the swap
    factory = functools.partial(handler, directory=str(out_dir))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), factory)


class Rebuilder:
    """Debounces file events and runs one build at a time; a failing build keeps the old site."""

    def __init__(self, config: BuildConfig, state: BuildState, report: Callable[[BuildReport, bool], None]):
        self.config, self.state, self.report = config, state, report
        self.warm = WarmState()  # parsed inputs and templates carried from one rebuild to the next
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self.builds = 0

    def schedule(self, *_args) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(DEBOUNCE_S, self.rebuild)
            self._timer.daemon = True
            self._timer.start()

    def rebuild(self) -> bool:
        with self._lock:
            self._timer = None
        try:
            report = build_site(self.config, self.warm)
        except KernelBenchError as exc:
            print(f"rebuild failed, still serving the previous site: {exc}", flush=True)
            return False
        except Exception:  # noqa: BLE001 - keep serving whatever the bug; show it in full
            traceback.print_exc()
            print("rebuild failed, still serving the previous site", flush=True)
            return False
        self.builds += 1
        if report.changed:
            self.state.bump()
        self.report(report, self.config.strict)
        return True


def watched_paths(config: BuildConfig) -> list[Path]:
    data = Path(config.data_dir)
    paths = [data / "runs", data / "annotations", config.templates_dir, config.static_dir]
    problems = config.resolved_problems_dir()
    if problems:
        paths.append(problems)
    return [p for p in paths if p.is_dir()]


class RunFolderPoller:
    """Watches a large runs folder by polling: every `interval` seconds, the modification time and inode of the
    folder and of each run folder in it (one `stat` a folder, about 10,000 a poll at 10,000 runs), and a rebuild is
    scheduled when any of them changed. Every writer of run directories publishes by renaming (a new run folder, a
    result.json replaced whole), which changes those times; the build itself then decides what changed from its
    file-system record. A file edited in place inside a run folder, without a rename, is not seen until the next
    change: run folders are written by the harness, not by hand."""

    def __init__(self, runs_dir: Path, on_change: Callable[[], None], interval: float = POLL_S):
        self.runs_dir, self.on_change, self.interval = Path(runs_dir), on_change, interval
        self._stopped = threading.Event()
        self._seen = self.signature()
        self._thread = threading.Thread(target=self._loop, name="run-folder-poller", daemon=True)

    def signature(self) -> dict[str, tuple[int, int]]:
        """(inode, mtime in ns) of the runs folder ("") and of each folder in it, by name."""
        seen: dict[str, tuple[int, int]] = {}
        try:
            top = os.stat(self.runs_dir)
            seen[""] = (top.st_ino, top.st_mtime_ns)
            with os.scandir(self.runs_dir) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            seen[entry.name] = (info.st_ino, info.st_mtime_ns)
                    except OSError:  # gone between the listing and the stat: the next poll sees it gone
                        continue
        except OSError:
            pass
        return seen

    def start(self) -> "RunFolderPoller":
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stopped.wait(self.interval):
            now = self.signature()
            if now != self._seen:
                self._seen = now
                self.on_change()

    def stop(self) -> None:
        self._stopped.set()


class Watchers:
    """The watchers of one dev loop, stopped together."""

    def __init__(self, *watchers):
        self.watchers = watchers

    def stop(self) -> None:
        for watcher in self.watchers:
            watcher.stop()


def run_folder_count(runs_dir: Path) -> int:
    try:
        with os.scandir(runs_dir) as entries:
            return sum(1 for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        return 0


def start_watching(config: BuildConfig, rebuilder: Rebuilder):
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    out_dir = Path(config.out_dir).resolve()

    class OnChange(FileSystemEventHandler):
        def on_any_event(self, event) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return
            src = Path(str(event.src_path)).resolve()
            if (
                src == out_dir
                or out_dir in src.parents
                or out_dir.parent == src.parent
                and src.name.startswith((".building-", ".retired-"))
            ):
                return
            rebuilder.schedule()

    runs_dir = Path(config.data_dir) / "runs"
    polled = runs_dir if run_folder_count(runs_dir) > INOTIFY_RUN_FOLDERS else None
    observer = Observer()
    for path in watched_paths(config):
        if path != polled:
            observer.schedule(OnChange(), str(path), recursive=True)
    observer.daemon = True
    observer.start()
    if polled is None:
        return Watchers(observer)
    return Watchers(observer, RunFolderPoller(polled, rebuilder.schedule).start())


def run_dev_loop(config: BuildConfig, port: int | None, print_report) -> int:
    """Build, then watch (and serve when `port` is given) until interrupted."""
    config.progress = False
    state = BuildState()
    rebuilder = Rebuilder(config, state, print_report)
    if not rebuilder.rebuild() and not Path(config.out_dir).is_dir():
        return 2
    observer = start_watching(config, rebuilder)
    server = make_server(Path(config.out_dir).resolve(), state, port) if port is not None else None
    try:
        if server is not None:
            host, bound = server.server_address[:2]
            print(f"serving http://{host!s}:{bound}/ (Ctrl-C to stop); rebuilding on changes", flush=True)
            server.serve_forever()
        else:
            print("watching for changes (Ctrl-C to stop)", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        observer.stop()
        if server is not None:
            server.server_close()
    return 0
