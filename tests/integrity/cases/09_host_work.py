"""Class 9 variant, work the device events cannot see (GPU): the answer is computed on the host (exact, in
float64) while the grader's launch cover keeps the GPU busy, and only a copy of the finished result reaches the
device. Reading the inputs is a copy to the host, which waits for the device (the start event has fired by then),
so the 2 ms the host spends lie inside the device interval: the median must show them."""

import time

import torch

HOST_SECONDS = 0.002


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        began = time.perf_counter()
        x64 = x.detach().to("cpu", torch.float64)
        e = torch.exp(x64 - x64.amax(dim=-1, keepdim=True))
        y = (e / e.sum(dim=-1, keepdim=True)).float()
        while time.perf_counter() - began < HOST_SECONDS:  # stands for heavier host-side work
            pass
        return y.to(x.device, non_blocking=False)
