"""What one build keeps for the next: validated inputs (in memory while watching, on disk between commands)
and the compiled templates.

Nothing here decides whether a page is stale: page fingerprints (manifest.py) still do that from content
hashes. This only saves parsing work, and every saved parse is keyed by the hash of the exact bytes parsed
(`ParseCache`), so a reused value can never belong to different file contents.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models behind it are imported when a build starts, not for `build.py --help`
    from kernelbench.results.dataset import Dataset, ParseCache
    from kernelbench.sitegen.snapshot import Snapshot

CACHE_DIR = ".kernelbench-cache"
VIEWER_CACHE = f"{CACHE_DIR}/viewer"  # a file per run page: the transcript viewer's first screen (runpage.ViewerReuse)
PARSE_CACHE_NAME = "parsed-inputs.pickle"
_PACKAGE = Path(__file__).resolve().parents[1]
# the code whose classes are pickled, and the code that derives what is kept of a run's result (its run view's own
# part: sitegen/views.py): a change to any of it makes the saved cache unusable
_MODEL_SOURCES = ("results", "problems/spec.py", "problems/baselines.py", "fileio.py", "errors.py",
                  "sitegen/views.py", "base/models.py")


@dataclass
class WarmState:
    """Kept by the dev server between rebuilds, so a rebuild after one edit parses and compiles only that edit."""

    parse_cache: ParseCache = field(default_factory=lambda: _new_parse_cache())
    memo: object | None = None  # plan.PlanMemo (not imported here: plan imports this module): derived values keyed by what they were derived from
    # the previous build's file-system record and dataset, and when its manifest was begun: what shows which
    # records the next build may keep unread (results.dataset.KeptInputs)
    snapshot: Snapshot | None = None
    dataset: Dataset | None = None
    manifest_started_ns: int = 0
    env: object | None = None  # jinja2 environment, valid for `env_key`
    env_key: str = ""
    builds: int = 0


def _new_parse_cache(statuses: dict | None = None, stored: dict | None = None) -> ParseCache:
    from kernelbench.results.dataset import ParseCache

    return ParseCache(statuses=statuses, stored=stored)


def viewer_cache_file(site_dir: Path, run_id: str) -> Path:
    """Where a run's transcript viewer first screen is kept for the next build (see runpage.ViewerReuse)."""
    return Path(site_dir) / VIEWER_CACHE / f"{run_id}.json"


def parse_cache_path(out_dir: Path) -> Path:
    return Path(out_dir) / CACHE_DIR / PARSE_CACHE_NAME


def cache_version() -> str:
    import pydantic

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{sys.version}|{pydantic.VERSION}".encode())
    for name in _MODEL_SOURCES:
        root = _PACKAGE / name
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            h.update(str(path.relative_to(_PACKAGE)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def load_parse_cache(out_dir: Path, version: str) -> ParseCache:
    """The previous build's parsed inputs, or an empty cache (anything unreadable or from other code: start
    afresh). The file is the build's own output; it is never read from the input folders. Each value stays
    pickled until a load asks for it (ParseCache.stored)."""
    try:
        saved = pickle.loads(parse_cache_path(out_dir).read_bytes())  # our own output folder
        kept = (saved["statuses"], saved["stored"]) if saved.get("version") == version else (None, None)
    except Exception:  # noqa: BLE001 - a cache that cannot be read is simply not used
        kept = (None, None)
    return _new_parse_cache(*kept)


def save_parse_cache(cache: ParseCache, staging: Path, version: str) -> None:
    """Write what this build used, unless it is exactly what the previous build saved (then the hard link
    seeded from the previous site is already right). Values that came back pickled are written as the same
    bytes: only what this build parsed is pickled."""
    target = parse_cache_path(staging)
    if target.exists() and cache.unchanged_since_loaded():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # a hard link into the previous site: replace it, never write through it
    # inside the staging folder, which is swapped in whole: no atomic write needed; pickled straight into the file,
    # each value as its turn comes (`_Stored`), not every value's pickle in memory at once first (90 MB at ten
    # thousand runs)
    with open(target, "wb") as handle:
        pickle.dump({"version": version, "statuses": cache.statuses_used, "stored": _Stored(cache)}, handle,
                    protocol=pickle.HIGHEST_PROTOCOL)


class _Stored:
    """The cache's used values, pickled, as a dict pickled item by item: pickle writes a mapping's items in
    batches of a thousand, asking for each as it goes (the fifth item of `__reduce__`), and reads it back as a
    plain dict of key -> pickled value (what `load_parse_cache` takes)."""

    def __init__(self, cache: ParseCache):
        self.cache = cache

    def __reduce__(self):
        return dict, (), None, None, ((key, self.cache.pickled(key)) for key in self.cache.used)
