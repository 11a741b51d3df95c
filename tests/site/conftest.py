"""Fixtures for the site tests: a small synthetic data folder and a built site."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelbench.sitegen.pipeline import BuildConfig, build_site
from tests.support.synthetic import write_deck


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


PAYLOAD = '</script><script>window.__pwned = (window.__pwned || 0) + 1</script><img src=x onerror="window.__pwned=9">'


def plant_payloads(deck: Path) -> None:
    """Script payloads in a model name, a solution, a log, an annotation and a transcript of the deck."""
    import json

    import yaml

    runs = sorted(p for p in (deck / "runs").iterdir() if p.is_dir())
    result_path = runs[0] / "result.json"
    data = json.loads(result_path.read_text())
    data["model"] = "evil" + PAYLOAD
    data["grading"]["reasons"] = ["reason " + PAYLOAD]
    for shape in data["grading"]["shapes"]:  # the GPU conditions' texts: a reason, a GPU's name, reasons seen
        shape["conditions"] = {"measured": False, "reason": "no NVML " + PAYLOAD}
    if data["grading"].get("conditions"):
        data["grading"]["conditions"].update(gpu="GPU-" + PAYLOAD, throttle_reasons=["sw_power_cap", PAYLOAD],
                                             throttled=True, throttled_share=0.5)
    data["grading"]["held_out"] = {"correct": False, "note": "note " + PAYLOAD, "shapes": [{"n": PAYLOAD}],
                                   "checks": [{"shape_index": 0, "seed": 7, "case": "heldout:" + PAYLOAD,
                                               "passed": False, "message": "wrong " + PAYLOAD}],
                                   "timing_note": "timing " + PAYLOAD}
    data["grading"]["sanitizer"] = {"passed": False, "case": "s0_" + PAYLOAD, "runs": [
        {"tool": "memcheck", "ran": True, "findings": [{"tool": "memcheck", "kernel": "k<" + PAYLOAD + ">",
                                                        "kind": "Invalid read " + PAYLOAD, "in_reference": False,
                                                        "evidence": ["at k+0x10 " + PAYLOAD, "by thread (0,0,0)"]}]},
        {"tool": "racecheck", "note": "not run: " + PAYLOAD}]}
    result_path.write_text(json.dumps(data))
    for run in runs:
        if (run / "solution.py").exists():
            (run / "solution.py").write_text((run / "solution.py").read_text() + f"# {PAYLOAD}\n")
        (run / "check.log").write_text(f"check {PAYLOAD}\n")
        (run / "benchmark.log").write_text(f"bench {PAYLOAD}\n")
    for path in sorted((deck / "annotations").glob("*.yaml")):
        loaded = yaml.safe_load(path.read_text())
        loaded["summary"] = "Upcasts " + PAYLOAD
        path.write_text(yaml.safe_dump(loaded, sort_keys=False))
    from kernelbench.transcripts.normalized import NormalizedWriter

    with NormalizedWriter(runs[1] / "transcript.jsonl", harness="claude", model="m" + PAYLOAD) as log:
        log.user("please " + PAYLOAD)
        log.assistant("sure " + PAYLOAD)
        call = log.tool_call("Bash", {"command": "echo " + PAYLOAD})
        log.tool_result(call, PAYLOAD, exit_code=0)


@pytest.fixture(scope="session")
def hostile_site(pristine_deck: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    deck = root / "data"
    shutil.copytree(pristine_deck, deck)
    plant_payloads(deck)
    out = root / "site"
    build_site(make_config(deck, out))
    return out
