"""Class 1, library bypass on GQA prefill attention: scaled_dot_product_attention reached through __import__
with a fromlist and a name built from pieces."""

import torch

_F = __import__("torch.nn.functional", fromlist=["functional"])
_attend = getattr(_F, "scaled_dot_product_" + "attention")


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int):
        super().__init__()
        self.group = num_heads // num_kv_heads

    def forward(self, q, k, v):
        k = k.repeat_interleave(self.group, dim=1)
        v = v.repeat_interleave(self.group, dim=1)
        return _attend(q, k, v, is_causal=True)
