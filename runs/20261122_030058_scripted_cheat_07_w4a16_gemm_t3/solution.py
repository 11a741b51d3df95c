"""Class 1, library bypass on the W4A16 GEMM: dequantise, then hand the GEMM to a throw-away nn.Linear built
inside forward (holding parameters is honest, calling it is cuBLAS). Nothing in the text names a forbidden
function; the launch audit sees aten::linear / the GEMM kernels."""

import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.ones(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low, high = (self.qweight & 0xF).float(), (self.qweight >> 4).float()
        q = torch.stack((low, high), dim=-1).reshape(self.qweight.shape[0], -1)
        scales = self.scales.float().repeat_interleave(self.group_size, dim=1)
        zeros = self.zeros.float().repeat_interleave(self.group_size, dim=1)
        w = ((q - zeros) * scales).to(torch.bfloat16).float()
        layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, device=x.device)
        with torch.no_grad():
            layer.weight.copy_(w)
        return layer(x.float()).to(torch.bfloat16)
