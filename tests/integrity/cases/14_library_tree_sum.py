"""Class 14, the Kahan leak as the published solutions committed it: the normaliser is torch's own float32 sum.

No forbidden op is named. On the GPU torch's reduction spreads a long row over many blocks, so each thread's
chain of additions is short and the row sums stay under the normalisation bound on most shapes (measured on the
H100: 4.9e-7 to 8.6e-7 against a 1e-6 bound); the launch audit recognises the fp32 reduction kernel by name instead.
GPU only: on the CPU torch sums in a cascade whose error on the smoke shapes depends on the draw, and the CPU
profiler names the op (aten::sum) without its accumulation type."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
