"""Runtime guards around a candidate call: pinned backend flags, poisoned allocations, launch errors, and a
math library whose kernels are chosen before any call can race to choose them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Each flag: (getter, setter, pinned value or None to keep the value found at pin time).
Flag = tuple[Callable[[], Any], Callable[[Any], None], Any]
_FLAGS: dict[str, Flag] = {
    "torch.backends.cuda.matmul.allow_tf32": (
        lambda: torch.backends.cuda.matmul.allow_tf32,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_tf32", v), False),
    "torch.backends.cudnn.allow_tf32": (
        lambda: torch.backends.cudnn.allow_tf32, lambda v: setattr(torch.backends.cudnn, "allow_tf32", v), False),
    "torch.float32_matmul_precision": (
        torch.get_float32_matmul_precision, torch.set_float32_matmul_precision, "highest"),
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", v), None),
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        lambda v: setattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", v), None),
    "torch.backends.cudnn.benchmark": (
        lambda: torch.backends.cudnn.benchmark, lambda v: setattr(torch.backends.cudnn, "benchmark", v), False),
    "torch.default_dtype": (torch.get_default_dtype, torch.set_default_dtype, torch.float32),
    "torch.autocast(cuda)": (lambda: torch.is_autocast_enabled("cuda"),
                             lambda v: torch.set_autocast_enabled("cuda", v), False),
    "torch.autocast(cpu)": (lambda: torch.is_autocast_enabled("cpu"),
                            lambda v: torch.set_autocast_enabled("cpu", v), False),
}


def _new_api_flags() -> dict[str, Flag]:
    """torch >= 2.9 also has per-backend `fp32_precision` strings; record them, so a switch shows up."""
    flags: dict[str, Flag] = {}
    for path in ("backends", "backends.cuda.matmul", "backends.cudnn", "backends.cudnn.conv", "backends.mkldnn"):
        obj: Any = torch  # walked by attribute name: whatever this torch has
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and hasattr(obj, "fp32_precision"):
            flags[f"torch.{path}.fp32_precision"] = _precision_flag(obj)
    return flags


def _precision_flag(obj: Any) -> Flag:
    """The flag of `obj.fp32_precision`, its getter and setter bound to `obj`."""
    def get() -> Any:
        return obj.fp32_precision

    def set_(value: Any) -> None:
        obj.fp32_precision = value

    return get, set_, None


def _all_flags() -> dict[str, Flag]:
    return {**_FLAGS, **_new_api_flags()}


def _read(get: Callable[[], Any]) -> Any:
    try:
        return get()
    except Exception as exc:  # torch refuses to read a legacy flag once the new API was used
        return f"unreadable ({type(exc).__name__})"


def _write(set_: Callable[[Any], None], value: Any) -> None:
    try:
        set_(value)
    except Exception:  # a flag this torch build refuses to set: its state is still read back and compared
        pass


def pin_backend_flags() -> dict[str, Any]:
    """Set the flags that change numerics to their strict values; returns the pinned state to verify later."""
    state = {}
    for name, (get, set_, pinned) in _all_flags().items():
        if pinned is not None:
            _write(set_, pinned)
        state[name] = _read(get)
    return state


def changed_flags(pinned: dict[str, Any]) -> list[str]:
    """Flags that differ from the pinned state (a candidate switched TF32, autocast, ...); re-pins them."""
    flags = _all_flags()
    now = {name: _read(flags[name][0]) for name in pinned}  # read all first: re-pinning one resets others
    changed = [f"{name} changed from {value!r} to {now[name]!r}" for name, value in pinned.items()
               if now[name] != value]
    if changed:
        for name, value in pinned.items():
            if not str(value).startswith("unreadable"):
                _write(flags[name][1], value)
    return changed


# float32/float64 unary ops that torch sends to MKL's vector math library (VML) on the CPU, chunk by chunk from
# every intra-op thread (torch's aten/src/ATen/cpu/vml.h lists them)
VML_OPS = ("exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "asin", "acos", "atan", "sqrt", "erf", "erfc",
           "erfinv", "trunc")
VML_DTYPES = (torch.float32, torch.float64)


def warm_math_library() -> None:
    """Make each VML function choose its kernel on this thread alone, before any multithreaded call.

    oneMKL 2024.2 (bundled with torch's CPU wheels) picks a function's kernel on its first call; when that first
    call runs on several threads at once (a fresh process's first sizable torch.exp), one thread can run the
    low-accuracy kernel over its whole chunk of that call: errors near 1e-4 relative in float32 (1e-9 in float64)
    while VML_HA was asked for, correct again from the second call on (pytorch/pytorch#188792). Observed here as
    the bench stage's first timed call of an honest softmax disagreeing with its own checked output. A
    one-element call stays on the calling thread (far below torch's parallel grain), so the choice is made
    before threads can race for it."""
    for dtype in VML_DTYPES:
        one = torch.full((1,), 0.5, dtype=dtype)
        for name in VML_OPS:
            getattr(torch, name)(one)


def fill_uninitialized(enabled: bool) -> None:
    """Make torch.empty & co. return NaN-filled (or max-int) memory instead of whatever was there before."""
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    # a property of the module's own class, which torch's stubs do not declare
    torch.utils.deterministic.fill_uninitialized_memory = enabled  # type: ignore[attr-defined]


def poison_free_memory(device: torch.device, max_bytes: int = 2 << 30) -> None:
    """Empty the caching allocator, then hand it back blocks filled with 0xFF (NaN in every float format).

    A later allocation that is not written before it is read then sees NaN, not a stale result. On the CPU
    the allocator does not cache, so this only seeds malloc's free lists (best effort).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info(device)
        sizes = [min(max_bytes, free // 4)] + [1 << 20] * 16 + [4096] * 64
    else:
        sizes = [1 << 20] * 8 + [4096] * 64
    blocks = [torch.empty(n, dtype=torch.uint8, device=device).fill_(0xFF) for n in sizes if n > 0]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    del blocks  # back into the allocator's cache, still poisoned


def synchronize(device: torch.device) -> None:
    """Wait for all streams; raises on an asynchronous launch error (illegal address, bad launch, ...)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def inputs_changed(before: list[Any], after: list[Any]) -> list[str]:
    """Inputs that differ bitwise from their pristine copy (NaN equal to NaN)."""
    changed = []
    for i, (a, b) in enumerate(zip(before, after)):
        if isinstance(a, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype or not _bitwise_equal(a, b):
                changed.append(f"input {i} was modified by the candidate")
        elif a != b:
            changed.append(f"input {i} was modified by the candidate")
    return changed


def _bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))
    return bool(torch.equal(a, b))
