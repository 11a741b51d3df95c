"""Bad input: a correct softmax that floods stdout with ~8 MB on every call (the grader keeps a bounded
head and tail of the output; the verdict is unaffected)."""

import sys

import torch

_LINE = "x" * 1023 + "\n"


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(1 << 13):
            sys.stdout.write(_LINE)
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
