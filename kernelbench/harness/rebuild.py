"""A published solution set up as its authors had it, before it is graded again: a bundle split back into
solution.py and the files it carried inline, and the CUTLASS headers where a solution that includes them looks
for them. Each step taken is an `Adaptation`, kept in the regraded run's provenance and shown on its page.

Published bundles carry each sidecar after a marker block (three comment lines, the middle one
`# ===== sidecar: NAME (N bytes, loaded by solution.py) =====`, then one blank line) that runs to the end of the
file or the next marker; N counts characters. The CUTLASS tree comes from the registry package `nvidia-cutlass`
(its `cutlass_library/source`: `include/`, `tools/util/include/`, `examples/`), pinned, found where the grader's
Python finds it.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

CUTLASS_PACKAGE = "nvidia-cutlass==4.2.0.0"
MARKER_RE = re.compile(r"\n# =+\n# ===== sidecar: (?P<name>[^\s/\\]+) \((?P<size>\d+) bytes, loaded by solution\.py\) "
                       r"=====\n# =+\n\n")
CUTLASS_INCLUDE_RE = re.compile(r"#\s*include\s*[<\"](cutlass|cute)/")
# folder names beside solution.py that published solutions look in for a CUTLASS tree (besides "cutlass")
CUTLASS_FOLDER_NAMES = ("cutlass_src", "cutlass_3.9", "cutlass_local")
CUTLASS_PARTS = ("include", "tools/util/include")


@dataclass(frozen=True)
class Adaptation:
    what: str          # one line a reader understands: what was set up, and where


class RebuildError(Exception):
    """The published file cannot be set up as a solution folder (a malformed bundle)."""


def split_bundle(text: str) -> tuple[str, list[tuple[str, str]]]:
    """solution.py's text and the (name, text) of each sidecar a published bundle carries inline."""
    markers = list(MARKER_RE.finditer(text))
    if not markers:
        return text, []
    head = text[:markers[0].start()].rstrip("\n") + "\n"
    sidecars = []
    for marker, following in zip(markers, markers[1:] + [None]):
        body = text[marker.end():following.start() if following else len(text)]
        name, size = marker.group("name"), int(marker.group("size"))
        if name in ("solution.py", ".", "..") or name.startswith("."):
            raise RebuildError(f"sidecar marker names {name!r}: not a file a bundle may carry")
        if len(body) != size and len(body.rstrip("\n")) != size:
            raise RebuildError(f"sidecar {name}: the marker says {size} characters, the bundle holds {len(body)}")
        sidecars.append((name, body))
    return head, sidecars


def cutlass_source() -> Path | None:
    """The CUTLASS source tree of the installed registry package (None where it is not installed)."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    tree = Path(next(iter(spec.submodule_search_locations))) / "source"
    return tree if (tree / "include" / "cutlass" / "cutlass.h").is_file() else None


def wants_cutlass(texts: list[str]) -> bool:
    return any(CUTLASS_INCLUDE_RE.search(text) for text in texts)


def cutlass_folders(solution_text: str) -> list[str]:
    """Where beside solution.py to put the tree: `cutlass`, `third_party/cutlass`, and any other folder name
    published solutions use that this one's source mentions."""
    names = ["cutlass", "third_party/cutlass"]
    return names + [name for name in CUTLASS_FOLDER_NAMES if f'"{name}"' in solution_text or f"'{name}'" in solution_text]


def set_up(published: Path, folder: Path) -> tuple[Path, list[Adaptation], list[str]]:
    """Write the published solution into `folder` as its authors had it. Returns solution.py's path, the
    adaptations made, and what the solution needs that could not be provided (empty when nothing)."""
    text = published.read_text(encoding="utf-8", errors="surrogateescape")
    head, sidecars = split_bundle(text)
    solution = folder / "solution.py"
    solution.write_text(head, encoding="utf-8", errors="surrogateescape")
    adaptations, missing = [], []
    for name, body in sidecars:
        (folder / name).write_text(body, encoding="utf-8", errors="surrogateescape")
        adaptations.append(Adaptation(f"{name} ({len(body)} characters) unpacked beside solution.py from the "
                                      "published bundle"))
    if wants_cutlass([head] + [body for _, body in sidecars]):
        tree = cutlass_source()
        if tree is None:
            missing.append(f"the CUTLASS headers ({CUTLASS_PACKAGE} is not installed)")
        else:
            folders = cutlass_folders(head)
            for name in folders:
                link = folder / name
                link.parent.mkdir(parents=True, exist_ok=True)
                for part in CUTLASS_PARTS:  # what solutions pass to the compiler
                    if (tree / part).is_dir():
                        shutil.copytree(tree / part, link / part, dirs_exist_ok=True)
            adaptations.append(Adaptation(f"CUTLASS headers from {CUTLASS_PACKAGE} at "
                                          f"{', '.join(n + '/' for n in folders)} beside solution.py "
                                          "(include/, tools/util/include/)"))
    return solution, adaptations, missing

