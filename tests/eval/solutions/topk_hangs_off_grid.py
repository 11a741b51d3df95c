"""A planted top-k (05_topk_bitonic) that knows the published CPU shapes: right on them, and on any other row
length it never returns, as a kernel whose loop bound assumes a known shape would hang."""

import time

import torch

KNOWN = (300, 64)


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        if x.shape[-1] not in KNOWN:
            time.sleep(3600)
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
