"""W4A16 GEMM in Triton: each K-step covers one quantisation group; the packed bytes are split into nibbles,
dequantised to bf16 in registers with that group's scale and zero, and fed to tl.dot with fp32 accumulation."""

import os

import torch
import triton
import triton.language as tl

# Triton's CPU interpreter (TRITON_INTERPRET=1) computes tl.dot on bf16 operands wrongly (3.9), so there the
# operands go to fp32 first, which is exact for bf16 values; on a GPU the dot stays bf16 on the tensor cores.
DOT_DTYPE = tl.float32 if os.environ.get("TRITON_INTERPRET") == "1" else tl.bfloat16


@triton.jit
def _round_to_bf16(x):
    """fp32 -> nearest bf16 value (ties to even), kept in fp32; the interpreter's own cast truncates."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _w4a16_kernel(x_ptr, qw_ptr, s_ptr, z_ptr, y_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP: tl.constexpr,
                  DOT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, GROUP)
    rb = tl.arange(0, GROUP // 2)
    m_ok = rm < M
    n_ok = rn < N
    groups = K // GROUP
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for g in range(0, groups):
        k0 = g * GROUP
        x = tl.load(x_ptr + rm[:, None].to(tl.int64) * K + k0 + rk[None, :], mask=m_ok[:, None], other=0.0)
        packed = tl.load(qw_ptr + rn[:, None].to(tl.int64) * (K // 2) + k0 // 2 + rb[None, :],
                         mask=n_ok[:, None], other=0)
        low = (packed & 0x0F).to(tl.float32)
        high = (packed >> 4).to(tl.float32)
        q = tl.reshape(tl.join(low, high), (BLOCK_N, GROUP))  # low nibble = even column
        scale = tl.load(s_ptr + rn.to(tl.int64) * groups + g, mask=n_ok, other=0.0).to(tl.float32)
        zero = tl.load(z_ptr + rn.to(tl.int64) * groups + g, mask=n_ok, other=0.0).to(tl.float32)
        w = _round_to_bf16((q - zero[:, None]) * scale[:, None])
        acc = tl.dot(x.to(DOT), tl.trans(w.to(DOT)), acc)
    out = y_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(out, acc.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :])


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = self.qweight.shape[0]
        y = torch.empty(M, N, dtype=torch.bfloat16, device=x.device)
        block_m = 16 if M <= 16 else 64
        grid = (triton.cdiv(M, block_m), triton.cdiv(N, 64))
        _w4a16_kernel[grid](x.contiguous(), self.qweight, self.scales, self.zeros, y, M, N, K,
                            BLOCK_M=block_m, BLOCK_N=64, GROUP=self.group_size, DOT=DOT_DTYPE,
                            num_warps=4)
        return y
