"""A W4A16 GEMM whose output is right within the tolerance but not the same from call to call: every call moves
one element by one bf16 step, a different element each time (as a race between blocks writing one tile would,
or float atomics finishing in another order). Planted for the repeat cases (tests/eval/test_repeat.py)."""

import torch

CALLS = [0]  # across model instances: the check stage builds a new one per shape


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nibbles = torch.stack([self.qweight & 0x0F, self.qweight >> 4], dim=-1).flatten(1).float()
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        zeros = self.zeros.float().repeat_interleave(self.group_size, dim=1)
        w = ((nibbles - zeros) * scales).to(torch.bfloat16).float()
        out = torch.stack([(w * row.float()[None, :]).sum(dim=-1) for row in x]).to(torch.bfloat16)
        CALLS[0] += 1
        flat = out.view(-1)
        at = CALLS[0] % flat.numel()
        flat[at] = torch.nextafter(flat[at:at + 1], torch.tensor([float("inf")], dtype=out.dtype))[0]
        return out
