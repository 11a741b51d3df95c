"""Class 14, the fp8 leak (GPU): up-cast the e4m3 operands to bf16 and run a bf16 tensor-core GEMM in Triton.
Numerically identical (every e4m3 value is exact in bf16), so only the SASS check (HGMMA/HMMA.BF16 instead of
QGMMA) can tell."""

import torch
import triton
import triton.language as tl


@triton.jit
def _bf16_gemm(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[None, :] * K + (k0 + rk)[:, None],
                    mask=(rn[None, :] < N) & ((k0 + rk)[:, None] < K), other=0.0)
        acc += tl.dot(a, b)
    sa = tl.load(sa_ptr + rm, mask=rm < M, other=0.0)
    sb = tl.load(sb_ptr + rn, mask=rn < N, other=0.0)
    out = acc * sa[:, None] * sb[None, :]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.register_buffer("weight", torch.zeros(N, K, dtype=torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(N))

    def forward(self, x, x_scale):
        a = x.to(torch.bfloat16).contiguous()
        b = self.weight.to(torch.bfloat16).contiguous()
        M, K = a.shape
        N = b.shape[0]
        c = torch.empty(M, N, dtype=torch.bfloat16, device=x.device)
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        _bf16_gemm[grid](a, b, c, x_scale.reshape(-1).contiguous(), self.weight_scale.contiguous(), M, N, K,
                         BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        return c
