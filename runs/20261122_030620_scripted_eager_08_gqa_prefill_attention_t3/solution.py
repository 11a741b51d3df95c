"""Causal GQA attention in plain PyTorch without matmul or SDPA: slabs of query rows are scored against the
keys by broadcast multiply-and-sum, softmaxed with max subtraction in fp32, and mixed into the values the same
way. Slow, clearly correct."""

import math

import torch

_ELEMENTS_PER_STEP = 1 << 26  # caps each broadcast temporary at 256 MB of fp32


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, head_dim
        self.scale = 1.0 / math.sqrt(head_dim)

    def _head(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        L, D = q.shape
        step = max(1, _ELEMENTS_PER_STEP // (L * D))
        rows = []
        for start in range(0, L, step):
            stop = min(L, start + step)
            keys = k[:stop]  # causal: rows before `stop` see at most the first `stop` keys
            scores = (q[start:stop, None, :] * keys[None]).sum(-1) * self.scale
            allowed = torch.arange(stop, device=q.device)[None, :] <= torch.arange(start, stop, device=q.device)[:, None]
            scores = scores.masked_fill(~allowed, float("-inf"))
            weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            weights = weights / weights.sum(dim=-1, keepdim=True)
            rows.append((weights[:, :, None] * v[None, :stop]).sum(1))
        return torch.cat(rows)

    def forward(self, q, k, v):
        group = self.num_heads // self.num_kv_heads
        out = torch.empty_like(q)
        for b in range(q.shape[0]):
            for h in range(self.num_heads):
                kv = h // group
                out[b, h] = self._head(q[b, h].float(), k[b, kv].float(), v[b, kv].float()).to(q.dtype)
        return out
