"""Class 8 against the hardware-counter pass: honest everywhere except in the process Nsight Compute profiles
(found by its injection: the variables that load it, or its library among the mapped ones), where it returns the
row maxima, computed by allowed kernels that read every input byte. That pass's byte floor holds and its kernels
are allowed; the judgement of the measured call's output (`profiled_output`) is what sees it. A solution that
behaves so shows ncu one computation and runs another when timed."""

import os
import pathlib

import torch


def _under_ncu() -> bool:
    if any(name.startswith(("CUDA_INJECTION", "NV_COMPUTE_PROFILER")) for name in os.environ):
        return True
    try:
        return "ToolsInjection" in pathlib.Path("/proc/self/maps").read_text()
    except OSError:
        return False


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _under_ncu():
            return x.amax(dim=-1, keepdim=True).expand_as(x).contiguous()
        e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
        return (e / e.sum(dim=-1, keepdim=True)).float()
