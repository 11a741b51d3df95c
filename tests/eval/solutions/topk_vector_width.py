"""A planted shape-specialised top-k (05_topk_bitonic): it reads each row in vectors of 4 columns and never
handles a tail, so it is right on every published shape (n = 300 and 64 on the CPU; every GPU shape's n is a
multiple of 4 too) and wrong where n is not a multiple of 4 and a winner sits in the last columns."""

import torch

VECTOR = 4


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        covered = x.shape[-1] // VECTOR * VECTOR
        work = x[:, :covered].clone()
        rows = torch.arange(x.shape[0], device=x.device)
        columns = torch.arange(covered, device=x.device)[None, :]
        values, indices = [], []
        for _ in range(self.k):
            value = work.amax(dim=-1)
            index = torch.where(work == value[:, None], columns, covered).amin(dim=-1)
            values.append(value)
            indices.append(index)
            work[rows, index] = float("-inf")
        return torch.stack(values, dim=-1), torch.stack(indices, dim=-1)
