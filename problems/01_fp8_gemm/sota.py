"""torch._scaled_mm with rowwise scales: the library line for 01_fp8_gemm (needs dims padded to 16)."""

import torch
import torch.nn.functional as F


def _pad_to(t: torch.Tensor, rows: int, cols: int, value: float = 0.0) -> torch.Tensor:
    if t.shape == (rows, cols):
        return t
    return F.pad(t.float(), (0, cols - t.shape[1], 0, rows - t.shape[0]), value=value).to(t.dtype)


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.weight.shape[0]
        Mp, Np, Kp = (-(-d // 16) * 16 for d in (M, N, K))
        a = _pad_to(x, Mp, Kp)
        b = _pad_to(self.weight, Np, Kp)
        sa = _pad_to(x_scale.float(), Mp, 1, 1.0)
        sb = _pad_to(self.weight_scale.float()[None, :], 1, Np, 1.0)
        y = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        return y[:M, :N].contiguous() if (Mp, Np) != (M, N) else y
