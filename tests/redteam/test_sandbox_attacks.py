"""Every attack of the catalogue, run inside the grader's candidate sandbox as the process that runs a solution
is run (confined, as root where the tests run as root, which CI and the GPU machines do): none may get its effect,
by its own account or by what the host shows afterwards."""

from __future__ import annotations

import os

import pytest

from .catalogue import ATTACKS
from .conftest import run_in_grading_sandbox, skip_unless_applies


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_gets_no_effect_in_the_grading_sandbox(attack, host):
    skip_unless_applies(attack)
    seen, proc = run_in_grading_sandbox(attack, host)
    assert not seen["effect"], f"{attack.name} got its effect: {seen['detail']}\n{proc.stderr[-1500:]}"
    # what the host shows, whatever the attack said of itself
    assert host.grader_file.read_text() == "untouched\n"
    assert host.reached() == 0, "a host listener was reached from the sandbox"
    assert not (host.workdir / "judge" / "worker_result.json").exists()
    assert (host.workdir / "solution" / "solution.py").read_text() == "# the linted solution\n"
    assert not any(name.startswith("kb-redteam") for name in os.listdir("/dev/shm")) if os.path.isdir(
        "/dev/shm") else True


def test_the_catalogue_covers_every_route_of_the_issue():
    routes = {a.route for a in ATTACKS}
    assert {"capability", "namespace", "host socket", "secret", "tracing", "flood", "file", "kernel"} <= routes
    assert len(ATTACKS) >= 30
