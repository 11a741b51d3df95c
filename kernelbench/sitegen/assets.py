"""Static assets: the site's own css/js and the plotly bundle, copied from the installed plotly package."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.sitegen.manifest import FileHasher

PLOTLY_URL = "static/plotly.min.js"


def plotly_bundle() -> Path:
    """plotly.js as shipped inside the plotly Python package (the site never loads it from a CDN)."""
    import importlib.util

    spec = importlib.util.find_spec("plotly")  # located, not imported: importing plotly costs a tenth of a second
    if spec is None or not spec.submodule_search_locations:
        raise KernelBenchError("the plotly package is not installed", hint="pip install -e .")
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise KernelBenchError(
            "plotly.min.js is missing from the plotly package",
            path=path,
            hint="reinstall plotly: pip install --force-reinstall plotly",
        )
    return path


def asset_sources(static_dir: Path) -> dict[str, Path]:
    """Site path -> source file for every asset the site ships."""
    sources = {PLOTLY_URL: plotly_bundle()}
    if Path(static_dir).is_dir():
        for path in sorted(Path(static_dir).rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                sources[f"static/{path.relative_to(static_dir).as_posix()}"] = path
    return sources


def copy_assets(
    sources: dict[str, Path], staging: Path, previous: dict[str, str], hasher: FileHasher
) -> tuple[dict[str, str], int]:
    """Copy assets whose content changed since the last build; return the new asset manifest and how many
    files were copied."""
    current: dict[str, str] = {}
    copied = 0
    for url, source in sources.items():
        digest = hasher(source) or ""
        current[url] = digest
        target = staging / url
        if previous.get(url) == digest and target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # it may be a hard link into the previous site
        shutil.copyfile(source, target)
        copied += 1
    for url in set(previous) - set(current):
        (staging / url).unlink(missing_ok=True)
        copied += 1
    return current, copied
