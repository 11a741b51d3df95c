"""Class 1, library bypass the lint cannot see: the matmul is fetched by scanning torch's namespace for a name
that is never written out. The launch audit sees aten::matmul / aten::mm (CPU) or cuBLAS kernels (GPU)."""

import torch

_op = next(getattr(torch, k) for k in sorted(dir(torch)) if k.startswith("mat") and k.endswith("ul"))


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x, x_scale):
        acc = _op(x.float(), self.weight.float().t())
        return (acc * x_scale * self.weight_scale[None, :]).to(torch.bfloat16)
