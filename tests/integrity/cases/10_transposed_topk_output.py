"""Class 10, output layout game: right values and indices, returned as transposed views of (k, batch) buffers
(dense but column-major strides; the consumer pays the copy the kernel skipped)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        work = x.clone()
        rows = torch.arange(x.shape[0], device=x.device)
        columns = torch.arange(x.shape[-1], device=x.device)[None, :]
        values = torch.empty(self.k, x.shape[0], dtype=x.dtype, device=x.device)
        indices = torch.empty(self.k, x.shape[0], dtype=torch.int64, device=x.device)
        for j in range(self.k):
            value = work.amax(dim=-1)
            index = torch.where(work == value[:, None], columns, x.shape[-1]).amin(dim=-1)
            values[j], indices[j] = value, index
            work[rows, index] = float("-inf")
        return values.t(), indices.t()
