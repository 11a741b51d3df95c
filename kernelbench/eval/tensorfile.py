"""A plain on-disk form for tensors passed between grading processes: a JSON header, then raw bytes.

Much faster than torch.save for the gigabyte outputs of full shapes (no zip, no CRC), and it carries the
exact strides, so stride checks see what the candidate really returned. Writes are atomic (a reader either
sees no file or the whole file)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

MAGIC = b"KBT1"


def _describe(t: torch.Tensor) -> dict[str, Any]:
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "stride": list(t.stride()),
            "dense": _non_overlapping_dense(t), "device": t.device.type}


def _non_overlapping_dense(t: torch.Tensor) -> bool:
    """Strides that are a permutation of some contiguous layout (so the values can be laid back exactly)."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def save_tensors(path: Path, tensors: list[torch.Tensor], *, single: bool) -> None:
    path = Path(path)
    meta = {"single": single, "tensors": [_describe(t) for t in tensors]}
    header = json.dumps(meta).encode()
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
        for t in tensors:
            data = t.detach().contiguous().cpu()
            if data.numel():  # the buffer itself, not a bytes copy of it (gigabytes on full shapes)
                handle.write(memoryview(data.reshape(-1).view(torch.uint8).numpy()))
    os.replace(tmp, path)


def load_tensors(path: Path, device: str | torch.device = "cpu") -> tuple[list[torch.Tensor], bool, list[dict]]:
    """(tensors with their saved strides where dense, single?, per-tensor metadata)."""
    buffer = bytearray(os.path.getsize(path))
    with open(path, "rb") as handle:
        handle.readinto(buffer)
    if bytes(buffer[:4]) != MAGIC:
        raise ValueError(f"{path} is not a tensor file")
    size = int.from_bytes(buffer[4:12], "little")
    meta = json.loads(bytes(buffer[12:12 + size]))
    offset, tensors = 12 + size, []
    for info in meta["tensors"]:
        dtype = getattr(torch, info["dtype"])
        count = 1
        for d in info["shape"]:
            count *= d
        nbytes = count * torch.empty((), dtype=dtype).element_size()
        flat = torch.frombuffer(buffer, dtype=torch.uint8, count=nbytes, offset=offset) if nbytes else \
            torch.empty(0, dtype=torch.uint8)
        offset += nbytes
        value = flat.view(dtype).reshape(info["shape"]).to(device)
        if info["dense"] and list(value.stride()) != info["stride"]:
            value = torch.empty_strided(info["shape"], info["stride"], dtype=dtype, device=device).copy_(value)
        tensors.append(value)
    return tensors, meta["single"], meta["tensors"]


def load_output(path: Path, device: str | torch.device = "cpu") -> Any:
    tensors, single, _ = load_tensors(path, device)
    return tensors[0] if single else tuple(tensors)
