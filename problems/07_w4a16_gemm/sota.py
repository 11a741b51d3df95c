"""PyTorch's int4 weight-only GEMM (tinygemm, `torch._weight_int4pack_mm`): the library line for 07_w4a16_gemm.

The weights are repacked once, when they are loaded (a deployment converts its checkpoint once): tinygemm wants
the int4 values with the even column in the high nibble, tiled by `_convert_weight_to_int4pack`, and one
(scale, offset) pair per group with W = (q - 8) · scale + offset. The reference's asymmetric groups,
W = (q - z) · s, are the same numbers with offset = (8 - z) · s.
"""

import torch

INNER_K_TILES = 8  # tinygemm accepts 2, 4 or 8; 8 needs K to be a multiple of 128, which every deck shape is
N_ALIGN = 16       # tinygemm's packing takes whole tiles of 16 output rows: others are padded once, at packing


def _unpack_low_first(qweight: torch.Tensor) -> torch.Tensor:
    return torch.stack([qweight & 0x0F, qweight >> 4], dim=-1).reshape(qweight.shape[0], -1)


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int, group_size: int):
        super().__init__()
        self.group_size = group_size
        self.register_buffer("qweight", torch.zeros(N, K // 2, dtype=torch.uint8))
        self.register_buffer("scales", torch.ones(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("zeros", torch.zeros(N, K // group_size, dtype=torch.bfloat16))
        self.register_buffer("packed", torch.empty(0), persistent=False)
        self.register_buffer("scale_offset", torch.empty(0), persistent=False)
        self.register_load_state_dict_post_hook(lambda module, _keys: module.repack())

    @torch.no_grad()
    def repack(self) -> None:
        q = _unpack_low_first(self.qweight).to(torch.int32)
        n = q.shape[0]
        pad = -n % N_ALIGN
        q = torch.nn.functional.pad(q, (0, 0, 0, pad), value=8)
        k_tiles = INNER_K_TILES if q.shape[1] % (INNER_K_TILES * 16) == 0 else 2
        if q.is_cuda:
            self.packed = torch._convert_weight_to_int4pack((q[:, 0::2] << 4 | q[:, 1::2]).to(torch.uint8), k_tiles)
        else:
            self.packed = torch._convert_weight_to_int4pack_for_cpu(q, k_tiles)
        scales = torch.nn.functional.pad(self.scales.float(), (0, 0, 0, pad))
        offsets = (8.0 - torch.nn.functional.pad(self.zeros.float(), (0, 0, 0, pad), value=8.0)) * scales
        self.scale_offset = torch.stack([scales, offsets], dim=-1).transpose(0, 1).contiguous().to(torch.bfloat16)

    def _apply(self, fn, *args, **kwargs):
        # the packed layout is device-specific: pack again once the weights have moved
        before = self.qweight.device
        moved = super()._apply(fn, *args, **kwargs)
        if self.packed.numel() and self.qweight.device != before:
            self.repack()
        return moved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mm = torch._weight_int4pack_mm if x.is_cuda else torch._weight_int4pack_mm_for_cpu
        y = mm(x, self.packed, self.group_size, self.scale_offset)
        n = self.qweight.shape[0]
        return y if y.shape[1] == n else y[:, :n].contiguous()
