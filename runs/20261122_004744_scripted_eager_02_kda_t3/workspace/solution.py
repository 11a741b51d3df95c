"""KDA forward in chunked form, plain PyTorch.

Within a chunk, with Γ_t the cumulative log-gate since the chunk start and S0 the state entering it, the
recurrence unrolls to S_t = diag(e^Γ_t) (S0 + Σ_{s≤t} (k_s e^{-Γ_s}) u_sᵀ), where the corrected values u solve the
unit lower-triangular system (I + diag(β) L) u = diag(β) (V − (K e^Γ) S0) with L[s, r] = Σ_c k_s k_r e^{Γ_s − Γ_r}
for r < s. Every exponent that is used is a difference Γ_later − Γ_earlier ≤ 0, so nothing overflows however fast
the gates decay. Chunks are processed in order; everything inside a chunk is batched matmuls and one solve.
"""

import torch

CHUNK = 64


def _pairwise_decay(gamma: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
    """exp(Γ_s − Γ_r) per channel for r ≤ s (s rows, r columns), zero above the diagonal; (B, H, C, C, D)."""
    diff = gamma[:, :, :, None, :] - gamma[:, :, None, :, :]
    return torch.exp(diff.masked_fill(~causal[None, None, :, :, None], float("-inf")))


def _chunk(q, k, v, g, beta, state, scale):
    """One chunk; inputs (B, H, C, D) fp32 (beta (B, H, C)); returns the chunk's output and the next state."""
    C = q.shape[2]
    gamma = torch.cumsum(g, dim=2)
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    decay = _pairwise_decay(gamma, causal)                                    # (B, H, C, C, D)
    kk = torch.einsum("bhsd,bhrd,bhsrd->bhsr", k, k, decay).tril(-1)         # L, strictly lower
    system = torch.eye(C, device=q.device) + beta[..., None] * kk
    rhs = beta[..., None] * (v - torch.einsum("bhsd,bhdv->bhsv", k * torch.exp(gamma), state))
    u = torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)
    qk = torch.einsum("bhtd,bhsd,bhtsd->bhts", q, k, decay)                   # includes s = t
    out = scale * (torch.einsum("bhtd,bhdv->bhtv", q * torch.exp(gamma), state) + qk @ u)
    to_end = torch.exp(gamma[:, :, -1:, :] - gamma)                           # e^{Γ_C − Γ_s} ≤ 1
    state = torch.exp(gamma[:, :, -1, :])[..., None] * state + torch.einsum("bhsd,bhsv->bhdv", k * to_end, u)
    return out, state


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, g, beta):
        B, T, H, D = q.shape
        q, k, v, g = (t.float().transpose(1, 2) for t in (q, k, v, g))          # (B, H, T, D)
        beta = beta.float().transpose(1, 2)                                      # (B, H, T)
        state = torch.zeros(B, H, D, v.shape[-1], device=q.device)
        outs = []
        for start in range(0, T, CHUNK):
            part = slice(start, min(T, start + CHUNK))
            out, state = _chunk(q[:, :, part], k[:, :, part], v[:, :, part], g[:, :, part], beta[:, :, part],
                                state, self.scale)
            outs.append(out)
        return torch.cat(outs, dim=2).transpose(1, 2).contiguous().to(torch.bfloat16)
