"""torch._scaled_mm with rowwise scales: the library line for 01_fp8_gemm.

cuBLASLt wants K and N in multiples of 16: the static weight and its scales are padded once, when they are
loaded (a deployment pads its checkpoint once); only an activation whose K is unaligned is padded per call.
"""

import torch
import torch.nn.functional as F

ALIGN = 16


def _padded(t: torch.Tensor, rows: int, cols: int, value: float = 0.0) -> torch.Tensor:
    if t.shape == (rows, cols):
        return t
    return F.pad(t.float(), (0, cols - t.shape[1], 0, rows - t.shape[0]), value=value).to(t.dtype)


def _aligned(d: int) -> int:
    return -(-d // ALIGN) * ALIGN


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))
        self.register_buffer("weight_t", torch.empty(0), persistent=False)
        self.register_buffer("scale_b", torch.empty(0), persistent=False)
        self.register_load_state_dict_post_hook(lambda module, _keys: module.pad_weight())
        self.pad_weight()

    @torch.no_grad()
    def pad_weight(self) -> None:
        N, K = self.weight.shape
        # stored (Np, Kp) row-major: its transpose is the column-major operand cuBLASLt takes
        self.weight_t = _padded(self.weight, _aligned(N), _aligned(K)).t()
        self.scale_b = _padded(self.weight_scale.float()[None, :], 1, _aligned(N), 1.0)

    def forward(self, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.weight.shape[0]
        a = _padded(x, M, _aligned(K))
        y = torch._scaled_mm(a, self.weight_t, scale_a=x_scale.float(), scale_b=self.scale_b,
                             out_dtype=torch.bfloat16)
        return y if y.shape[1] == N else y[:, :N].contiguous()
