"""How a candidate finds Nsight Compute in its own process: ncu's injection library and the variables that load it.
libcupti alone is not one: torch's profiler maps it in the checked calls too (a first run on an H200 took it for
ncu and failed every check). Shared by the GPU cases that behave otherwise under ncu."""
import os
import pathlib

_PROFILER_TELLS = ("ToolsInjection",)


def under_ncu() -> bool:
    if any(name.startswith(("CUDA_INJECTION", "NV_COMPUTE_PROFILER", "NSYS_")) for name in os.environ):
        return True
    try:
        maps = pathlib.Path("/proc/self/maps").read_text()
    except OSError:
        return False
    return any(tell in maps for tell in _PROFILER_TELLS)
