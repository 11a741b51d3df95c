"""Class 16, invalid launch (GPU): a Triton kernel whose grid covers one row too many and whose loads are
unmasked, so the last program reads past the buffer and the output is garbage or the launch fails."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, y_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * vocab + offs + (1 << 40))  # wild address: an illegal memory access
    tl.store(y_ptr + row * vocab + offs, x)


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        _row_kernel[(x.shape[0] + 1,)](x, y, x.shape[1], BLOCK=1024)
        return y
