"""Class 5, partial computation on the fp8 GEMM: accumulate only the first half of K (outputs stay roughly the
right size, so a loose tolerance would be tempting)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x, x_scale):
        half = x.shape[1] // 2
        a, w = x[:, :half].float(), self.weight[:, :half].float()
        acc = (a[:, None, :] * w[None, :, :]).sum(-1) * 2.0
        return (acc * x_scale * self.weight_scale[None, :]).to(torch.bfloat16)
