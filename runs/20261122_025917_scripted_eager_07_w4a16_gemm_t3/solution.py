"""W4A16 in plain PyTorch: unpack and dequantise the weight, then one broadcast multiply-and-sum per row of x
(no matmul). Materialises the fp32 weight: slow and memory-hungry, but clearly correct."""

import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))

    def _weight(self) -> torch.Tensor:
        nibbles = torch.stack([self.qweight & 0x0F, self.qweight >> 4], dim=-1).flatten(1).float()
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        zeros = self.zeros.float().repeat_interleave(self.group_size, dim=1)
        return ((nibbles - zeros) * scales).to(torch.bfloat16).float()  # bf16 weights, as specified

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self._weight()
        rows = [(w * row.float()[None, :]).sum(dim=-1) for row in x]
        return torch.stack(rows).to(torch.bfloat16)
