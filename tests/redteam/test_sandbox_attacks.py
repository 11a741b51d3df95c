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
    assert (host.workdir / "solution" / "kernels.cu").read_text() == "// a sidecar\n"
    assert not any(name.startswith("kb-redteam") for name in os.listdir("/dev/shm")) if os.path.isdir(
        "/dev/shm") else True


def test_the_catalogue_covers_every_route_of_the_issue():
    routes = {a.route for a in ATTACKS}
    assert {"capability", "namespace", "host socket", "secret", "tracing", "flood", "file", "kernel"} <= routes
    assert len(ATTACKS) >= 30


def test_a_solution_may_add_a_build_folder_beside_itself(host):
    """Published solutions build beside solution.py (`_sol_ext/`, `build/`): where root grades, the candidate's
    stage may add files to the grader's copy of its folder, not change the files there (the attacks above)."""
    from kernelbench import confinement

    from .catalogue import Attack

    if not confinement.running_as_root():
        pytest.skip("the solution folder accepts new files only where root grades")
    build = Attack("build_beside", "file", r'''
target = os.path.join(HOST_WORKDIR, "solution", "_sol_ext")
os.makedirs(target)
open(os.path.join(target, "ext.so"), "wb").write(b"built")
report(True, "built beside the solution")
''')
    seen, proc = run_in_grading_sandbox(build, host)
    assert seen["effect"], f"{seen['detail']}\n{proc.stderr[-1500:]}"
    assert (host.workdir / "solution" / "_sol_ext" / "ext.so").read_bytes() == b"built"
