"""Paged decode attention in plain PyTorch: gather each sequence's pages, then broadcast-multiply-and-sum
(no matmul, no SDPA) with a max-subtracted softmax in fp32."""

import math

import torch


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_size: int):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.scale = 1.0 / math.sqrt(head_dim)

    def _gather(self, cache, pages, length):
        return cache[pages].reshape(-1, self.num_kv_heads, self.head_dim)[:length].float()

    def forward(self, q, k_cache, v_cache, block_table, seq_lens):
        group = self.num_heads // self.num_kv_heads
        out = torch.empty_like(q)
        for b, length in enumerate(seq_lens.tolist()):
            pages = block_table[b, : -(-length // self.page_size)].long()
            k = self._gather(k_cache, pages, length)                      # (L, Hkv, D)
            v = self._gather(v_cache, pages, length)
            qg = q[b].float().view(self.num_kv_heads, group, self.head_dim)   # (Hkv, G, D)
            scores = (qg[:, :, None, :] * k.permute(1, 0, 2)[:, None]).sum(-1) * self.scale  # (Hkv, G, L)
            weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            weights = weights / weights.sum(dim=-1, keepdim=True)
            mixed = (weights[..., None] * v.permute(1, 0, 2)[:, None]).sum(2)  # (Hkv, G, D)
            out[b] = mixed.reshape(self.num_heads, self.head_dim).to(q.dtype)
        return out
