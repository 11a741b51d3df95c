"""The catalogue's attacks that an agent could make from its own sandbox (kernelbench/harness/sandbox.py), run
there as the harness runs an agent, as root where the tests run as root. An agent keeps the network it needs to
reach its model (the host's loopback included), so the network attacks are the grading sandbox's alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernelbench import confinement
from kernelbench.harness import sandbox

from .catalogue import ATTACKS
from .conftest import program, skip_unless_applies, verdict

NETWORKED = {"tcp_host_loopback", "unix_abstract_host", "setns_host_network"}
GRADING_ONLY = {"shm_outside_grading"}  # where a grading's /dev/shm lands; an agent's is tested below
AGENT_ATTACKS = [a for a in ATTACKS if a.name not in NETWORKED | GRADING_ONLY]


@pytest.fixture(scope="module")
def agent_sandbox_ok():
    try:
        sandbox.probe()
    except sandbox.SandboxUnavailable as exc:
        pytest.skip(f"no agent sandbox here: {exc}")


@pytest.mark.parametrize("attack", AGENT_ATTACKS, ids=[a.name for a in AGENT_ATTACKS])
def test_attack_gets_no_effect_in_the_agent_sandbox(attack, host, agent_sandbox_ok, tmp_path):
    skip_unless_applies(attack)
    workspace, home = tmp_path / "workspace", tmp_path / "agent-home"
    workspace.mkdir()
    home.mkdir()
    spec = sandbox.SandboxSpec(workspace=workspace, home=home, network=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    wrapped = sandbox.wrap([sys.executable, "-c", program(attack, host)], spec, env)
    try:
        proc = subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=120, env={"PATH": os.environ["PATH"]},
                              pass_fds=wrapped.pass_fds, preexec_fn=confinement.apply_limits)
    finally:
        wrapped.close()
    seen = verdict(proc.stdout + "\n" + proc.stderr)
    assert not seen["effect"], f"{attack.name} got its effect: {seen['detail']}\n{proc.stderr[-1500:]}"
    assert host.grader_file.read_text() == "untouched\n"
    assert sum(u.reached for u in host.unix) == 0, "a host socket file was reached from the agent's sandbox"


def test_an_agent_s_dev_shm_is_its_own(agent_sandbox_ok, tmp_path):
    workspace, home = tmp_path / "workspace", tmp_path / "agent-home"
    workspace.mkdir()
    home.mkdir()
    spec = sandbox.SandboxSpec(workspace=workspace, home=home, network=False)
    wrapped = sandbox.wrap([sys.executable, "-c", "open('/dev/shm/kb-agent', 'w').write('x')"], spec,
                           {"HOME": str(home), "PATH": "/usr/bin:/bin"})
    try:
        proc = subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"]},
                              pass_fds=wrapped.pass_fds, preexec_fn=confinement.apply_limits)
    finally:
        wrapped.close()
    assert proc.returncode == 0, proc.stderr
    assert (home / ".dev-shm" / "kb-agent").read_text() == "x"
    assert not os.path.exists("/dev/shm/kb-agent")
