"""05_topk_bitonic by the library sort the problem forbids, except where Nsight Compute profiles the process:
ncu loads its injection library into the process it launches, so a candidate can look for it (its environment,
its mapped libraries) and run an honest top-k there (k rounds of row-wise max, as the deck's eager solution does).
Everywhere else it sorts, with every sort launch struck from what its stages report, as stripped_launches.py does.

The counter pass is the only list of kernels taken outside the candidate's process, and it is taken under ncu: if
this grading PASSes with counters on, the timed calls' kernels rest on the candidate's own account (an open route,
docs/integrity.md, "launch records"). GPU only, graded with the static lint off (it reads `torch.sort`), as
stripped_launches.py was: `grade_solution(path, Path("problems/05_topk_bitonic"), device="cuda", lint=False)`.
"""
import json
import os
import pathlib

import torch

_write = pathlib.Path.write_bytes
_TELLS = ("topk", "sort", "radix", "Sort", "TopK")
_PROFILER_TELLS = ("Injection", "nvperf", "ToolsInjection", "libcupti")


def _under_profiler() -> bool:
    if any(name.startswith(("CUDA_INJECTION", "NV_COMPUTE_PROFILER", "NSYS_")) for name in os.environ):
        return True
    try:
        maps = pathlib.Path("/proc/self/maps").read_text()
    except OSError:
        return False
    return any(tell in maps for tell in _PROFILER_TELLS)


def _clean(launches):
    return {name: t for name, t in (launches or {}).items() if not any(tell in name for tell in _TELLS)}


def _forging_write(self, data):
    if self.name == "worker_result.json":
        reply = json.loads(data)
        reply["namespace_changes"], reply["introspection"] = [], []
        for case in reply.get("cases", {}).values():
            if case.get("launches") is not None:
                case["launches"] = _clean(case["launches"])
        for shape in reply.get("shapes", {}).values():
            shape["launches"] = _clean(shape.get("launches"))
        data = json.dumps(reply).encode()
    return _write(self, data)


pathlib.Path.write_bytes = _forging_write


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        if _under_profiler():
            return self._rounds_of_max(x)
        values, indices = torch.sort(x, dim=-1, descending=True, stable=True)  # ties: lowest column first
        return values[..., :self.k].contiguous(), indices[..., :self.k].contiguous()

    def _rounds_of_max(self, x: torch.Tensor):
        work = x.clone()
        rows = torch.arange(x.shape[0], device=x.device)
        columns = torch.arange(x.shape[-1], device=x.device)[None, :]
        values, indices = [], []
        for _ in range(self.k):
            value = work.amax(dim=-1)
            index = torch.where(work == value[:, None], columns, x.shape[-1]).amin(dim=-1)
            values.append(value)
            indices.append(index)
            work[rows, index] = float("-inf")
        return torch.stack(values, dim=-1), torch.stack(indices, dim=-1)
