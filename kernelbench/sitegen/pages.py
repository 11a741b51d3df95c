"""A page of the site: where it comes from, where it goes, and what decides whether it must be re-rendered."""

from __future__ import annotations

import functools
import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable

from kernelbench.sitegen.manifest import hash_data


@dataclass
class Page:
    """One HTML file of the site.

    `inputs` is the JSON-able data the page is a function of (plus the templates): its hash decides whether
    the page is rendered again. `context` turns it into the template's variables; expensive work (reading
    solutions, parsing the transcript) happens there, only for pages that are actually rendered.
    """

    url: str  # path inside the site, e.g. "runs/<run_id>/index.html"
    template: str
    title: str
    inputs: Any
    sources: tuple[str, ...] = ()  # input files, for diagnostics and the page footer
    context: Callable[["Page", dict], dict] | None = None  # (page, {"staging", "diagnostics_out"})
    kind: str = "page"
    parallel: bool = False  # heavy enough to be worth a worker process
    # Inputs known only by reading a file the render reads anyway (a run's transcript, hashed where the page is
    # rendered instead of once more while planning): fills them into `inputs` and returns the file signatures
    # it took, for the manifest. A page with it is always rendered (it has no previous record to match).
    settle: Callable[[], dict[str, list]] | None = None
    # what the fingerprint hashes in place of `inputs`, when given: the inputs with each run view replaced by its
    # own digest (plan.SiteData.hashed), so ten thousand run views are serialised once a build, not once per page
    # that lists them
    hashed: Any = None
    # a page the previous build planned and rendered from what is still its input (plan.KeptRunPages): its
    # fingerprint is that build's, and `replan` plans it in full, for when its file is not there to be kept
    replan: Callable[[], "Page"] | None = None
    kept_digest: str = ""
    digest: str = field(default="", init=False)
    digest_of: str = field(default="", init=False)  # the templates hash `digest` was taken with

    def fingerprint(self, templates_hash: str) -> str:
        if self.kept_digest:
            return self.kept_digest
        # a watching build may plan a page again from the same inputs (plan.PlanMemo) after a template changed
        if not self.digest or self.digest_of != templates_hash:
            inputs = self.inputs if self.hashed is None else self.hashed
            self.digest = hash_data([templates_hash, self.url, self.template, self.title, inputs])
            self.digest_of = templates_hash
        return self.digest

    def href(self, target: str) -> str:
        """A link from this page to `target` (a site path), relative so the site works from file://."""
        return relative_url(self.url, target)


def relative_url(from_url: str, to_url: str) -> str:
    """Both arguments are site paths ("runs/x/index.html"); the result is the link from one page to the other."""
    fragment = ""
    if "#" in to_url:
        to_url, fragment = to_url.split("#", 1)
        fragment = "#" + fragment
    return _relative(posixpath.dirname(from_url), to_url or from_url) + fragment


@functools.lru_cache(maxsize=65536)
def _relative(base_dir: str, target: str) -> str:
    # site paths are normalised and never hold "..", so this is a prefix walk (posixpath.relpath is ~10x slower)
    base = base_dir.split("/") if base_dir else []
    parts = target.split("/")
    common = 0
    while common < len(base) and common < len(parts) - 1 and base[common] == parts[common]:
        common += 1
    return "../" * (len(base) - common) + "/".join(parts[common:]) or "."


def slug(text: str) -> str:
    """A file-name-safe, readable slug; distinct labels stay distinct through a short hash of the original."""
    import hashlib
    import re

    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:160] or "x"
    if cleaned == text:
        return cleaned
    return f"{cleaned}-{hashlib.blake2b(text.encode(), digest_size=3).hexdigest()}"
