"""Class 3, input mutation: compute in place on the input and return it, so a reference computed afterwards
on the same tensor would see the answer. The candidate works on clones and inputs are compared after."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True)).exp_()
        total = x.double().sum(dim=-1, keepdim=True)
        x.copy_((x.double() / total).float())
        return x
