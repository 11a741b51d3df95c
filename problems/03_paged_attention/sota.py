"""FlashInfer's batch decode over a paged KV cache: the library line for 03_paged_attention.

A serving engine hands FlashInfer each step's pages in CSR form (indptr, indices, the last page's length) and
plans once per step; the plan is host-side scheduling that reads the page counts, so it is part of every call
here, as it is of every decode step. Tensor cores are used where a KV head serves more than four query heads
(FlashInfer's own advice for grouped-query decode; its CUDA-core decode kernels cover groups of 1, 2, 3, 4 and 8).
"""

import torch
import flashinfer

WORKSPACE_BYTES = 128 * 1024 * 1024


class Model(torch.nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, page_size: int):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self._wrapper = None

    def _decode_wrapper(self, device: torch.device):
        if self._wrapper is None:
            workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=device)
            group = self.num_heads // self.num_kv_heads
            self._wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                workspace, kv_layout="NHD", use_tensor_cores=group > 4)
        return self._wrapper

    def forward(self, q, k_cache, v_cache, block_table, seq_lens):
        pages = (seq_lens + self.page_size - 1) // self.page_size
        indptr = torch.zeros(len(seq_lens) + 1, dtype=torch.int32, device=q.device)
        indptr[1:] = torch.cumsum(pages, 0)
        owned = torch.arange(block_table.shape[1], device=q.device)[None, :] < pages[:, None]
        indices = block_table[owned]  # row-major: each sequence's pages in its own order
        last_page_len = (seq_lens - (pages - 1) * self.page_size).int()
        wrapper = self._decode_wrapper(q.device)
        wrapper.plan(indptr, indices.int(), last_page_len, self.num_heads, self.num_kv_heads, self.head_dim,
                     self.page_size, pos_encoding_mode="NONE", q_data_type=q.dtype, kv_data_type=k_cache.dtype)
        return wrapper.run(q, (k_cache, v_cache))
