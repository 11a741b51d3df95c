"""Inside the grading worker: record the names of what a candidate's call ran, for the launch audit.

On CUDA the names are kernel names (with device time, which the fp8 SASS check weighs); on the CPU they are
aten operator names, so the same audit runs in CI without a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def record_launches(device_type: str) -> Iterator[dict[str, float]]:
    """`with record_launches("cuda") as launches: model(*inputs)` fills launches: name -> device time (us)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    launches: dict[str, float] = {}
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with profile(activities=activities, record_shapes=False) as prof:
        yield launches
        if device_type == "cuda":
            torch.cuda.synchronize()
    launches.update(launches_of(prof, device_type))


def launches_of(prof, device_type: str) -> dict[str, float]:
    names: dict[str, float] = {}
    for event in prof.events():
        kind = str(getattr(event, "device_type", "")).rsplit(".", 1)[-1].lower()
        if device_type == "cuda" and kind == "cuda":
            names[event.name] = names.get(event.name, 0.0) + float(getattr(event, "device_time", 0.0) or 0.0)
        elif event.name.startswith("aten::"):
            names.setdefault(event.name, 0.0)
    return names
