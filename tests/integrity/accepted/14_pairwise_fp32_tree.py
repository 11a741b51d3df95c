"""The row sum as a float32 pairwise tree written by hand (halve the row and add until one column is left): no
compensation and no float64, but no long chain either, so it is as accurate as compensation on every row the
problem checks, and the problem accepts it (see README.md in this folder)."""

import torch


def _tree_sum(t: torch.Tensor) -> torch.Tensor:
    while t.shape[-1] > 1:
        if t.shape[-1] % 2:
            t = torch.cat([t, t.new_zeros(t.shape[0], 1)], dim=-1)
        half = t.shape[-1] // 2
        t = t[:, :half] + t[:, half:]
    return t


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / _tree_sum(e)
