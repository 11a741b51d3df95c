"""A reference written against module-level shape globals (`M = 4096`, `get_inputs()`, `get_init_inputs()`),
the convention of KernelBench-Hard and Stanford KernelBench, presented with our interface (docs/grading.md,
contract 2): `get_init_args(shape)` and `get_inputs(shape, seed, device, case, scale)`.

- Shapes: each key of a shape is bound to the module global of the same name, or of the name in capitals
  (KernelBench-Hard's paged attention: `batch` -> `BATCH`), before the module's own functions run.
- Seeds: the module draws from torch's global generator, so it is seeded with the case's seed (the public seed
  mixed with the grading's secret) before `get_inputs()`. A module that seeds the generator itself (a fixed
  `torch.manual_seed(0)` inside `get_inputs`) gets a seed derived from the case's seed and the value it asked for,
  so the secret still reaches its inputs. The caller's own generator state is left as it was.
- Device: the module's factory calls run on the grading's device (`with torch.device(...)`; every stage asks for
  its draws there, `DRAWS_ON_DEVICE`), where its draws
  take milliseconds instead of the CPU's tens of seconds for a GiB-sized tensor (KernelBench-Hard's 06 draws a
  262144 x 4096 hidden state per input set). A module whose drawing needs the host (numpy, a CPU generator of
  its own) fails there and is drawn on the CPU instead, as its authors ran it; either way one seed gives one draw.
- Threads: globals and the global generator are one per process, so draws are serialised by a lock and the
  judge draws such inputs on its main thread (`THREAD_SAFE_INPUTS`).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from kernelbench.errors import KernelBenchError

_counter = itertools.count()
_lock = threading.RLock()
CASES = ("base", "normal")


def derived_seed(seed: int, asked: Any) -> int:
    """The seed a module asked for (`torch.manual_seed(asked)`) turned into one the case's seed decides."""
    digest = hashlib.sha256(f"{seed}|{asked}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (2**63 - 1)


def global_name(module: ModuleType, key: str) -> str | None:
    """The module global a shape key binds: the same name, else the name in capitals."""
    for name in (key, key.upper()):
        if name in vars(module):
            return name
    return None


def check_shape_keys(module: ModuleType, shapes: list[dict[str, Any]], path: Path, source: str) -> None:
    """Every key of every shape binds a module global (else the harness would draw the default shape silently)."""
    for index, shape in enumerate(shapes):
        for key in shape:
            if global_name(module, key) is None:
                raise KernelBenchError(
                    f"shape {index} of {source} has key '{key}', which names no module-level variable here "
                    f"(neither {key} nor {key.upper()})", path=path,
                    hint="the shape's keys are bound to the reference's module globals before get_inputs()")


def bind_shape(module: ModuleType, shape: dict[str, Any]) -> None:
    for key, value in shape.items():
        name = global_name(module, key)
        if name is not None:
            setattr(module, name, value)


def seeded_draw(torch, seed: int, draw: Callable[[], list]) -> list:
    """`draw()` with the global generator seeded from `seed`, the module's own seeding redirected through
    `derived_seed`, and the caller's generator state restored afterwards."""
    real = torch.manual_seed

    def redirected(asked):
        return real(derived_seed(seed, int(asked)))

    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        real(seed)
        torch.manual_seed, torch.random.manual_seed = redirected, redirected
        try:
            return list(draw())
        finally:
            torch.manual_seed, torch.random.manual_seed = real, real


def draw_on_device(torch, device, seed: int, draw: Callable[[], list]) -> list:
    """`seeded_draw` with the module's factory calls made on `device`; on the CPU where that device cannot run
    the module's drawing (numpy on a device tensor, a CPU generator passed to a device factory), never because the
    device was out of memory at that moment (kernelbench.base.device_errors)."""
    from kernelbench.base.device_errors import depends_on_the_moment

    if device.type == "cpu":
        return seeded_draw(torch, seed, draw)
    if device.type == "cuda":
        torch.cuda.init()  # so the draw's generator state is forked and restored like the CPU's
    try:
        with device:
            return seeded_draw(torch, seed, draw)
    except (RuntimeError, TypeError, ValueError, NotImplementedError) as exc:
        if depends_on_the_moment(torch, exc):  # a full card: the CPU would draw other inputs than other processes
            raise
        return seeded_draw(torch, seed, draw)


def scaled(torch, value: Any, scale: float) -> Any:
    if scale == 1.0 or not (isinstance(value, torch.Tensor) and value.is_floating_point()):
        return value
    return (value.float() * scale).to(value.dtype)


class StressTransform(Protocol):
    """Another benchmark's stress cases applied to a base draw (kbh_stress.StressInputs)."""

    def knows(self, case: str) -> bool: ...

    def apply(self, case: str, inputs: list) -> list: ...


def make_reference(module: ModuleType, shapes: list[dict[str, Any]], *, layout: str,
                   weights_by_seed: bool = False, stress: StressTransform | None = None) -> ModuleType:
    """A module with our reference interface around `module` (its Model class, its functions behind the shims).
    `stress`: the cases beyond the base draw (`case` names one): the base inputs drawn from the case's seed, then
    rewritten by it."""
    wrapper = ModuleType(f"_kb_{layout}_reference_{next(_counter)}", module.__doc__)
    wrapper.__file__ = getattr(module, "__file__", None)
    # the module's attributes, set through its namespace (ModuleType declares none of them)
    vars(wrapper).update(
        Model=module.Model,
        SOURCE_MODULE=module,
        SHAPES=shapes,
        LAYOUT=layout,
        THREAD_SAFE_INPUTS=False,
        DRAWS_ON_DEVICE=True,  # the grading's stages ask for the draw on their device (loader.inputs_device)
        # Stanford KernelBench builds Model and ModelNew under the same seed and compares them; where the
        # names of their parameters differ, the candidate is built under the reference's seed instead of
        # loading its weights
        WEIGHTS_BY_SEED=weights_by_seed,
    )

    def get_init_args(shape: dict[str, Any]) -> list:
        with _lock:
            bind_shape(module, shape)
            return list(module.get_init_inputs())

    def get_inputs(shape: dict[str, Any], seed: int, device, case: str = "base", scale: float = 1.0) -> list:
        import torch

        if case not in CASES and not (stress is not None and stress.knows(case)):
            raise ValueError(f"unknown case {case!r}: the problem declares no such stress case")
        with _lock:
            bind_shape(module, shape)
            drawn = draw_on_device(torch, torch.device(device), seed, module.get_inputs)
        if case not in CASES:
            assert stress is not None  # a case beyond the base draw is one `stress` knows (checked above)
            drawn = stress.apply(case, drawn)
        return [scaled(torch, x, scale).to(device) if isinstance(x, torch.Tensor) else x for x in drawn]

    def bind(shape: dict[str, Any]) -> None:
        """The module's globals set to `shape` (its forward may read them) before a shape's calls."""
        with _lock:
            bind_shape(module, shape)

    vars(wrapper).update(get_init_args=get_init_args, get_inputs=get_inputs, bind_shape=bind)
    return wrapper
