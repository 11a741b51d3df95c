"""The output fingerprint's tree (portable/fresh.py) as two Triton kernels, for outputs on a GPU.

The torch form runs about sixty elementwise passes over the output (every mixing step its own kernel): 5.4 ms for
a 32 MiB output on an H200, most of a paced call's overhead on large outputs. Here one program takes 1,024
consecutive leaves (or nodes) and reduces them ten levels in registers, so a 32 MiB output is read once and the
tree is three launches. The values are the torch form's exactly: the same 64-bit wrapping arithmetic in the same
order, the same pairing (node i of level k covers leaves i * 2^k to (i + 1) * 2^k - 1, so an aligned block of
2^10 is a subtree), the same constant padding of an odd level, and a level of one node passed up unchanged (the
torch form stops there). `fresh.fingerprint` checks that on every process's first use and keeps the torch form
where they differ; tests compare the two under Triton's interpreter.

Imported only where Triton is installed (fresh.py falls back to its torch form otherwise).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# the constants of portable/fresh.py (as signed 64-bit integers); fresh.py imports this module and checks they
# are its own
MIX1 = tl.constexpr(0xBF58476D1CE4E5B9 - (1 << 64))
MIX2 = tl.constexpr(0x94D049BB133111EB - (1 << 64))
LANE_A = tl.constexpr(0x9E3779B97F4A7C15 - (1 << 64))
LANE_C = tl.constexpr(0xD6E8FEB86659FD93 - (1 << 64))
NODE_A = tl.constexpr(0xC2B2AE3D27D4EB4F - (1 << 64))
NODE_C = tl.constexpr(0x165667B19E3779F9)
PAD = tl.constexpr(0x27D4EB2F165667C5)
BLOCK = 1024      # leaves (or nodes) per program
LEVELS = 10       # log2(BLOCK): one node per program comes out


@triton.jit
def _xor_lsr(x, bits: tl.constexpr):
    """x ^ (x >>> bits): a logical shift, as the arithmetic one masked."""
    return x ^ ((x >> bits) & ((1 << (64 - bits)) - 1))


@triton.jit
def _mix(x):
    x = _xor_lsr(x, 30) * MIX1
    x = _xor_lsr(x, 27) * MIX2
    return _xor_lsr(x, 31)


@triton.jit
def _reduce_block(a, c, pid, count, BLOCK: tl.constexpr, LEVELS: tl.constexpr):
    """LEVELS pairwise levels of (a, c), the block's first node at global index pid * BLOCK of a level of `count`
    nodes: a missing right child is the padding constant; a level of one node passes it up unchanged."""
    for k in tl.static_range(LEVELS):
        left_a, right_a = tl.split(tl.reshape(a, [BLOCK >> (k + 1), 2]))
        left_c, right_c = tl.split(tl.reshape(c, [BLOCK >> (k + 1), 2]))
        right = pid * (BLOCK >> k) + 2 * tl.arange(0, BLOCK >> (k + 1)) + 1
        right_a = tl.where(right >= count, PAD, right_a)
        right_c = tl.where(right >= count, PAD, right_c)
        node_a = _mix(left_a * NODE_A + right_a + (left_c ^ right_c))
        node_c = _mix(((left_c ^ right_a) * NODE_C) + right_c + node_a)
        a = tl.where(count > 1, node_a, left_a)
        c = tl.where(count > 1, node_c, left_c)
        count = (count + 1) // 2
    return a, c


@triton.jit
def _store_node(out_a_ptr, out_c_ptr, pid, a, c):
    """The block's one node, at the program's index of the next level."""
    one = tl.arange(0, 1)
    tl.store(out_a_ptr + pid + one, tl.reshape(a, [1]))
    tl.store(out_c_ptr + pid + one, tl.reshape(c, [1]))


@triton.jit
def _leaves_kernel(words_ptr, out_a_ptr, out_c_ptr, n, offset, weight, BLOCK: tl.constexpr,
                   LEVELS: tl.constexpr):
    pid = tl.program_id(0)
    index = pid * BLOCK + tl.arange(0, BLOCK)
    words = tl.load(words_ptr + index, mask=index < n, other=0)
    position = index.to(tl.int64) + offset
    a = _mix(position * LANE_A + words + weight)
    c = _mix(((position * LANE_C) ^ words) + a + PAD)
    a, c = _reduce_block(a, c, pid, n, BLOCK, LEVELS)
    _store_node(out_a_ptr, out_c_ptr, pid, a, c)


@triton.jit
def _nodes_kernel(a_ptr, c_ptr, out_a_ptr, out_c_ptr, n, BLOCK: tl.constexpr, LEVELS: tl.constexpr):
    pid = tl.program_id(0)
    index = pid * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + index, mask=index < n, other=0)
    c = tl.load(c_ptr + index, mask=index < n, other=0)
    a, c = _reduce_block(a, c, pid, n, BLOCK, LEVELS)
    _store_node(out_a_ptr, out_c_ptr, pid, a, c)


def chunk_root(words: torch.Tensor, offset: int, weight: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (a, c) root of one chunk's tree (fresh._tree(*fresh._leaves(words, offset, weight))), as 0-d tensors
    on the CPU."""
    n = words.numel()
    blocks = triton.cdiv(n, BLOCK)
    a = torch.empty(blocks, dtype=torch.int64, device=words.device)
    c = torch.empty_like(a)
    _leaves_kernel[(blocks,)](words, a, c, n, offset, weight, BLOCK=BLOCK, LEVELS=LEVELS)
    while a.numel() > 1:
        n = a.numel()
        blocks = triton.cdiv(n, BLOCK)
        next_a = torch.empty(blocks, dtype=torch.int64, device=words.device)
        next_c = torch.empty_like(next_a)
        _nodes_kernel[(blocks,)](a, c, next_a, next_c, n, BLOCK=BLOCK, LEVELS=LEVELS)
        a, c = next_a, next_c
    return a.reshape(()).cpu(), c.reshape(()).cpu()


def constants() -> tuple[int, ...]:
    return tuple(int(v.value) for v in (MIX1, MIX2, LANE_A, LANE_C, NODE_A, NODE_C, PAD))
