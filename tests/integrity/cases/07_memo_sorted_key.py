"""Class 7, answers kept under a key that ignores where each value sits: the input's shape and its sum, sum of
squares and sum of cubes (and a checksum of the weights), all unchanged when the elements are reordered. The timed
calls get fresh inputs (a base set's values reordered), so from the second call on a base set this key finds the
answer of an earlier ordering, which is wrong for this one: the judge's check of a few kept timed outputs and the
in-place replay probe both see a stale answer."""

import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.kept: dict[tuple, torch.Tensor] = {}

    def _weight(self) -> torch.Tensor:
        nibbles = torch.stack([self.qweight & 0x0F, self.qweight >> 4], dim=-1).flatten(1).float()
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        zeros = self.zeros.float().repeat_interleave(self.group_size, dim=1)
        return ((nibbles - zeros) * scales).to(torch.bfloat16).float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xd = x.double()
        key = (tuple(x.shape), float(xd.sum()), float(xd.square().sum()), float(xd.pow(3).sum()),
               int(self.qweight.sum(dtype=torch.int64)))
        if key not in self.kept:
            w = self._weight()
            self.kept[key] = torch.stack([(w * row.float()[None, :]).sum(dim=-1) for row in x]).to(torch.bfloat16)
        return self.kept[key].clone()
