"""Class 14, precision downgrade on add + RMSNorm + fp8 quantisation: the mean square, the normalisation and the
scale are computed in bfloat16 (the fp8 rounding afterwards hides most of the lost bits)."""

import torch


class Model(torch.nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16), requires_grad=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        h = (x.float() + residual.float()).to(torch.bfloat16)
        y = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        scale = y.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12) / 448.0
        q = (y.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
        return q, scale, h
