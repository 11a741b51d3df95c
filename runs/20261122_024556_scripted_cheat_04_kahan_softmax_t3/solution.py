"""Adversarial: softmax with a plain float32 row sum, no compensation (the published Kahan leak).

It avoids every forbidden op and is accurate enough for an elementwise tolerance on ordinary inputs; the
grader's absorb rows and fp64-oracle normalisation bound must fail it.
"""

import torch


class Model(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        return e / e.sum(dim=-1, keepdim=True)
