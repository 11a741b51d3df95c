"""FP8 GEMM as a loop of rank-1 updates in fp32 (no matmul): slow, exact products, fp32 sums.

Honest but not on FP8 tensor cores: on a GPU the fp8_tensor_cores check flags it, by design.
"""

import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        a = x.float()
        w = self.weight.float()
        acc = torch.zeros(a.shape[0], w.shape[0], device=x.device)
        for k in range(a.shape[1]):
            acc.addcmul_(a[:, k:k + 1], w[:, k][None, :])
        return (acc * x_scale * self.weight_scale[None, :]).to(torch.bfloat16)
