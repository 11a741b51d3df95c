"""Grouped SwiGLU in plain PyTorch without matmul: for each expert, slabs of rows are multiplied against the
expert's weights by broadcasting and summing over the hidden dimension in fp32. Slow, clearly correct."""

import torch
import torch.nn.functional as F

_ELEMENTS_PER_STEP = 1 << 26  # caps the broadcast temporary at 256 MB of fp32


def _rows_times_weight(rows: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """rows (m, k) fp32 · weight (n, k)ᵀ -> (m, n), by broadcast multiply and sum."""
    step = max(1, _ELEMENTS_PER_STEP // weight.numel())
    parts = [(rows[i:i + step, None, :] * weight[None]).sum(-1) for i in range(0, rows.shape[0], step)]
    return torch.cat(parts) if parts else rows.new_zeros(0, weight.shape[0])


class Model(torch.nn.Module):
    def __init__(self, experts: int, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = torch.nn.Parameter(torch.zeros(experts, intermediate, hidden, dtype=torch.bfloat16),
                                         requires_grad=False)
        self.up_proj = torch.nn.Parameter(torch.zeros(experts, intermediate, hidden, dtype=torch.bfloat16),
                                         requires_grad=False)

    def forward(self, x: torch.Tensor, expert_offsets: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], self.gate_proj.shape[1], dtype=x.dtype, device=x.device)
        bounds = expert_offsets.tolist()
        for e in range(self.gate_proj.shape[0]):
            rows = x[bounds[e]:bounds[e + 1]].float()
            gate = _rows_times_weight(rows, self.gate_proj[e].float())
            up = _rows_times_weight(rows, self.up_proj[e].float())
            out[bounds[e]:bounds[e + 1]] = (F.silu(gate) * up).to(x.dtype)
        return out
