"""What a solution compiled with torch.compile, by name (class 1: a forbidden op laundered through the compiler).

inductor fuses the operations of a compiled graph into generated kernels named after them
(`triton_per_fused__softmax_0`, `cpp_fused__softmax__to_copy_0`), and the launch audit refuses a forbidden op in
such a name (`launches._compiled_op_reason`). Two things keep that from being enough on its own:

- by default the names come from the aten operations after the Python-level decompositions, so `F.rms_norm`
  arrives as `fused_add_mean_mul_pow_rsqrt`; naming the kernels after the torch calls of the traced graph
  (`descriptive_names = "torch"`) gives `cpp_fused_rms_norm_0`. The worker sets that as soon as inductor's
  configuration is imported, by the solution or by torch.compile, and not before (importing it costs a second);
- on the CPU the profiler shows only the compiled region, not its kernels. inductor writes every generated module
  under the grading's own cache folder (TORCHINDUCTOR_CACHE_DIR, `sass.build_dirs`), so the grader reads the kernel
  names from those files after each stage.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import re
import sys
from pathlib import Path

INDUCTOR_CONFIG = "torch._inductor.config"
DEFINED_KERNEL = re.compile(r"^(?:def\s+)?((?:cpp_fused|triton_(?:poi|per|red|tem|for|mix)_fused)_\w+?_\d+)\b",
                            re.MULTILINE)
MAX_SCANNED_BYTES = 64 << 20


def name_kernels_after_torch_calls() -> None:
    """Set inductor's kernel names to the traced graph's torch calls once its configuration is imported."""
    if INDUCTOR_CONFIG in sys.modules:
        _describe_by_torch_calls(sys.modules[INDUCTOR_CONFIG])
        return
    sys.meta_path.insert(0, _ConfigFinder())


def _describe_by_torch_calls(config) -> None:
    for section in (getattr(config, "cpp", None), getattr(config, "triton", None)):
        if section is not None and hasattr(section, "descriptive_names"):
            section.descriptive_names = "torch"


class _ConfigFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of inductor's configuration to adjust it once executed."""

    def find_spec(self, fullname, path, target=None):
        if fullname != INDUCTOR_CONFIG:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _AdjustingLoader(spec.loader)
        return spec


class _AdjustingLoader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _describe_by_torch_calls(module)


def compiled_kernel_names(cache_dir: Path | str | None) -> list[str]:
    """The generated kernels' names in inductor's output modules under `cache_dir` (the grading's own)."""
    if not cache_dir or not Path(cache_dir).is_dir():
        return []
    names: set[str] = set()
    budget = MAX_SCANNED_BYTES
    for path in sorted(Path(cache_dir).rglob("*.py")):
        try:
            size = path.stat().st_size
            if size > budget:
                break
            budget -= size
            names.update(DEFINED_KERNEL.findall(path.read_text(errors="replace")))
        except OSError:
            continue
    return sorted(names)
