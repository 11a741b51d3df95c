"""Adversarial: casts the fp8 operands to bf16 and runs a bf16 GEMM (the published fp8 leak).

bf16 holds every e4m3 value exactly, so no tolerance tells the results apart; the grader must see that no FP8
tensor-core work ran (forbidden library GEMM, launch audit, or the SASS check on the GPU).
"""

import torch

FP8 = torch.float8_e4m3fn


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=FP8))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        acc = (x.to(torch.bfloat16) @ self.weight.to(torch.bfloat16).t()).float()
        return (acc * x_scale * self.weight_scale[None, :]).to(torch.bfloat16)
