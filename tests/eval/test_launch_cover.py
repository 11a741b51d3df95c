"""The launch cover (a device spin queued before a timed call, sized from the host's launch time) stays sized to
the launch work it hides, also for a call that makes the host wait for the device inside itself."""

from __future__ import annotations

import torch

from kernelbench.eval.portable.timing import LaunchCover


def _cover() -> LaunchCover:
    return LaunchCover(torch.device("cpu"))  # no spin kernel on the CPU: only the sizing runs


def _calls(cover: LaunchCover, host_us, outlasted: bool, n: int = 30) -> list[float]:
    sizes = []
    for _ in range(n):
        cover()
        sizes.append(cover.last_cover_us)
        cover.record_launch(host_us(cover.last_cover_us) / 1e3, outlasted=outlasted)
    return sizes


def test_an_asynchronous_call_gets_a_cover_a_little_longer_than_its_launch():
    sizes = _calls(_cover(), lambda cover_us: 100.0, outlasted=False)
    assert sizes[-1] == 20.0 + 1.5 * 100.0


def test_a_call_that_waits_for_the_device_does_not_grow_its_cover_to_the_cap():
    # the host waits out the cover and 300 us of the call's own device work before it returns
    waits = lambda cover_us: cover_us + 300.0  # noqa: E731
    sizes = _calls(_cover(), waits, outlasted=True)
    assert max(sizes) <= 20.0 + 1.5 * 300.0
    grown = _calls(_cover(), waits, outlasted=False)  # sized from the whole host time, as before
    assert grown[-1] == LaunchCover.MAX_US


def test_a_cover_too_short_for_a_long_launch_still_grows_to_hide_it():
    sizes = _calls(_cover(), lambda cover_us: 200.0, outlasted=False, n=1)
    cover = _cover()
    for _ in range(30):  # outlasted while the cover is shorter than the 200 us launch, not once it is longer
        cover()
        cover.record_launch(0.2, outlasted=cover.last_cover_us < 200.0)
    assert cover.cover_us >= 200.0 and sizes[0] == 50.0
