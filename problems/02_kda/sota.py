"""flash-linear-attention's chunked KDA forward (Triton): the library line for 02_kda."""

import torch
from fla.ops.kda import chunk_kda


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, head_dim
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, g, beta):
        out, _ = chunk_kda(q, k, v, g, beta, scale=self.scale, output_final_state=False)
        return out
