"""Class 7, memoisation that every output check accepts (GPU): answers are kept per input buffer, keyed by its
pointer and sixteen sampled values. Checked calls get fresh buffers (computed honestly); the timed loop rotates
over a few buffers, so after the first rotation every timed call returns a kept answer, right for its inputs.
The in-place overwrite probe changes the sampled values, so it recomputes and passes too. Only the hardware
counters see that a timed call reads sixteen values of a tensor it must read in full."""

import torch

_kept: dict = {}


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # integer steps: float32 linspace rounds the last index of a 206M-element tensor past its end
        picks = torch.arange(16, device=x.device) * ((x.numel() - 1) // 15)
        key = (x.data_ptr(), tuple(x.shape), tuple(x.reshape(-1)[picks].tolist()))
        if key not in _kept:
            e = torch.exp(x - x.amax(dim=-1, keepdim=True))
            _kept[key] = (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
        return _kept[key].clone()
