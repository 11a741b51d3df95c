"""Fixtures for the site tests: a small synthetic data folder and a built site."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelbench.sitegen.pipeline import BuildConfig, build_site
from kernelbench.sitegen.synthetic import write_deck

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]


def make_config(data: Path, out: Path, **kw) -> BuildConfig:
    return BuildConfig(data_dir=data, out_dir=out, jobs=kw.pop("jobs", 1), **kw)


@pytest.fixture
def config_for():
    """make_config as a fixture (test modules here are not a package, so they cannot import conftest)."""
    return make_config


@pytest.fixture(scope="session")
def pristine_deck(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deck")
    write_deck(root, n_runs=12, transcript_bytes=3000)
    return root


@pytest.fixture
def deck(pristine_deck: Path, tmp_path: Path) -> Path:
    """A private copy of the deck that a test may edit."""
    copy = tmp_path / "data"
    shutil.copytree(pristine_deck, copy)
    return copy


@pytest.fixture(scope="session")
def built_site(pristine_deck: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "site"
    build_site(make_config(pristine_deck, out))
    return out


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium_path, args=BROWSER_ARGS)
        yield instance
        instance.close()
