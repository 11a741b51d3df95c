"""A plain on-disk form for tensors passed between grading processes: a JSON header, then raw bytes.

Much faster than torch.save for the gigabyte outputs of full shapes (no zip, no CRC), and it carries the
exact strides, so stride checks see what the candidate really returned. Writes are atomic (a reader either
sees no file or the whole file).

Every tensor's bytes start on an ALIGN-byte boundary of the file, and the file is read into an ALIGN-aligned
buffer, so the loaded tensors are views whose data pointers are aligned (a view at an odd address, the header
having any length, is slow, and CPU kernels assume element-aligned data).

The header is a `kernelbench.eval.protocol.TensorHeader`: a file a candidate stage wrote is validated before use."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import torch

from kernelbench.eval.protocol import TENSOR_FILE_MAGIC as MAGIC
from kernelbench.eval.protocol import InputLayout, TensorHeader, TensorMeta

ALIGN = 64  # bytes; at least every dtype's element size, and a cache line


def tensor_meta(t: torch.Tensor) -> TensorMeta:
    """What a saved tensor's header says about it (dtype, shape, strides, dense, device)."""
    return TensorMeta(dtype=str(t.dtype).removeprefix("torch."), shape=list(t.shape), stride=list(t.stride()),
                      dense=_non_overlapping_dense(t), device=t.device.type)


def _non_overlapping_dense(t: torch.Tensor) -> bool:
    """Strides that are a permutation of some contiguous layout (so the values can be laid back exactly)."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _padding(offset: int) -> int:
    return -offset % ALIGN


def save_tensors(path: Path, tensors: list[torch.Tensor], *, single: bool) -> None:
    path = Path(path)
    header = TensorHeader(single=single, align=ALIGN,
                          tensors=[tensor_meta(t) for t in tensors]).model_dump_json().encode()
    header += b" " * _padding(12 + len(header))  # JSON allows trailing blanks: the data starts aligned
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
        for t in tensors:
            data = t.detach().contiguous().cpu()
            if data.numel():  # the buffer itself, not a bytes copy of it (gigabytes on full shapes)
                raw = data.reshape(-1).view(torch.uint8)
                # numpy's stubs give ndarray its buffer protocol (__buffer__) on Python 3.12 and later only
                handle.write(memoryview(raw.numpy()))  # type: ignore[arg-type]
                handle.write(b"\0" * _padding(raw.numel()))
    os.replace(tmp, path)


def _read_aligned(path: Path) -> torch.Tensor:
    """The whole file in a fresh uint8 tensor (torch's CPU allocator aligns it to at least ALIGN bytes)."""
    buffer = torch.empty(os.path.getsize(path), dtype=torch.uint8)
    with open(path, "rb") as handle:
        handle.readinto(memoryview(buffer.numpy()))  # type: ignore[arg-type]  # as in save_tensors
    return buffer


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r} in a tensor file header")
    return dtype


def load_tensors(path: Path, device: str | torch.device = "cpu") -> tuple[list[torch.Tensor], TensorHeader]:
    """The tensors (with their saved strides where dense) and the file's header. A file a candidate stage wrote is
    untrusted: a header that does not validate, or data shorter than it claims, is a ValueError."""
    return _tensors_in(_read_aligned(path), path, device)


def load_tensors_digested(path: Path, device: str | torch.device = "cpu"
                          ) -> tuple[list[torch.Tensor], TensorHeader, str]:
    """`load_tensors`, and the sha256 of the very bytes read (as `problems.loader.file_hashes` takes a file's):
    what a reader judged can be told from what the file holds later."""
    buffer = _read_aligned(path)
    digest = hashlib.sha256(memoryview(buffer.numpy())).hexdigest()  # type: ignore[arg-type]  # as in save_tensors
    return (*_tensors_in(buffer, path, device), digest)


def _tensors_in(buffer: torch.Tensor, path: Path, device: str | torch.device
                ) -> tuple[list[torch.Tensor], TensorHeader]:
    if buffer[:4].numpy().tobytes() != MAGIC:
        raise ValueError(f"{path} is not a tensor file")
    size = int.from_bytes(buffer[4:12].numpy().tobytes(), "little")
    header = TensorHeader.model_validate_json(buffer[12:12 + size].numpy().tobytes())
    offset, tensors = 12 + size, []
    for info in header.tensors:
        dtype = _dtype(info.dtype)
        count = 1
        for d in info.shape:
            count *= d
        itemsize = torch.empty((), dtype=dtype).element_size()
        nbytes = count * itemsize
        flat = buffer[offset:offset + nbytes]
        if flat.numel() != nbytes:
            raise ValueError(f"{path.name}: the data ends before the tensors its header describes")
        if flat.data_ptr() % itemsize:  # a file without padding: copy to aligned memory
            flat = flat.clone()
        offset += nbytes + (-nbytes % header.align)
        value = flat.view(dtype).reshape(info.shape).to(device)
        if info.dense and list(value.stride()) != info.stride:
            value = torch.empty_strided(info.shape, info.stride, dtype=dtype, device=device).copy_(value)
        tensors.append(value)
    return tensors, header


def load_output(path: Path, device: str | torch.device = "cpu") -> Any:
    tensors, header = load_tensors(path, device)
    return tensors[0] if header.single else tuple(tensors)


def layout_path(input_path: Path) -> Path:
    """Where a published input file's argument layout lies beside it."""
    return input_path.with_suffix(".json")


def load_inputs(path: Path, device: str | torch.device = "cpu") -> list:
    """A published input file's call arguments: its tensors, and the literals its layout names, in call order."""
    tensors, _ = load_tensors(path, device)
    layout = InputLayout.model_validate_json(layout_path(path).read_bytes())
    return [tensors[item] if isinstance(item, int) else item.value for item in layout.arguments]
