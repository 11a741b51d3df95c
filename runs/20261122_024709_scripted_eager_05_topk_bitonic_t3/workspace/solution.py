"""Top-k by k rounds of row-wise max in plain PyTorch: take the maximum (lowest column among equal values),
record it, mask it out."""

import torch


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        work = x.clone()
        rows = torch.arange(x.shape[0], device=x.device)
        columns = torch.arange(x.shape[-1], device=x.device)[None, :]
        values, indices = [], []
        for _ in range(self.k):
            value = work.amax(dim=-1)
            index = torch.where(work == value[:, None], columns, x.shape[-1]).amin(dim=-1)
            values.append(value)
            indices.append(index)
            work[rows, index] = float("-inf")
        return torch.stack(values, dim=-1), torch.stack(indices, dim=-1)
