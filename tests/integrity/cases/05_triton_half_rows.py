"""Class 5, partial computation done efficiently (GPU): a one-pass-per-row Triton softmax that computes only the
even rows and writes each result into the odd row after it too. Half the input is never read, which the DRAM
byte counters show however the kernel is written; the odd rows are also simply wrong."""

import torch
import triton
import triton.language as tl


@triton.jit
def _even_rows(x_ptr, y_ptr, rows, vocab, BLOCK: tl.constexpr):
    row = 2 * tl.program_id(0)
    src = x_ptr + row.to(tl.int64) * vocab
    offs = tl.arange(0, BLOCK)
    peak = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, vocab, BLOCK):
        peak = tl.maximum(peak, tl.load(src + start + offs, mask=start + offs < vocab, other=float("-inf")))
    top = tl.max(peak, axis=0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, vocab, BLOCK):
        v = tl.load(src + start + offs, mask=start + offs < vocab, other=float("-inf"))
        acc += tl.exp(v - top)
    total = tl.sum(acc, axis=0)
    for start in range(0, vocab, BLOCK):
        mask = start + offs < vocab
        p = tl.exp(tl.load(src + start + offs, mask=mask, other=float("-inf")) - top) / total
        tl.store(y_ptr + row.to(tl.int64) * vocab + start + offs, p, mask=mask)
        tl.store(y_ptr + (row + 1).to(tl.int64) * vocab + start + offs, p, mask=mask & (row + 1 < rows))


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, vocab = x.shape
        _even_rows[(triton.cdiv(rows, 2),)](x, y, rows, vocab, BLOCK=min(4096, triton.next_power_of_2(vocab)))
        return y
