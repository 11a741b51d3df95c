"""Whose code ran: the machine code of every kernel a solution built, wherever and however it built it.

The sandbox decides where a candidate can leave a binary: its stages may write only the grading's own folders
(the build caches the grader points TRITON_CACHE_DIR, TORCH_EXTENSIONS_DIR and TORCHINDUCTOR_CACHE_DIR at, and the
shared tmp, home, build and /dev/shm folders, `eval.isolation.SHARED_WRITABLE`), and it may read the binaries it
brought beside solution.py. So `load_inline`, `cpp_extension.load`, nvcc started through a subprocess into any
folder, Triton's cache and a cubin on disk all end up under those roots, whatever the environment variables say.
`MachineCode` disassembles every binary there once (cuobjdump, on first use) and answers two questions about a
launched kernel, by its demangled name as the profiler reported it:

- `own(name)`: the kernel was compiled from the solution's sources (its C++, CUDA, PTX or Triton, and the CUTLASS
  or CuTe templates it instantiates), not taken from a prebuilt library (cuBLAS, cuDNN, ATen, a wheel's .so);
- `code_of(name)`: its instructions, for the FP8 tensor-core rule (`sass.py`).

A kernel whose name carries a prebuilt library's signature (`LIBRARY_SIGNATURES`) is never the solution's, even
when a binary in those folders holds it: such names are what NVIDIA's libraries ship, and a copy of their code
under the grading's folders is still their code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from kernelbench.eval.integrity.sass import KernelCode, collect_sass, match_kernel

# what NVIDIA's prebuilt libraries name their kernels; no kernel compiled from a solution's own sources has these
LIBRARY_SIGNATURES = ("cublas", "cudnn", "nvjet", "xmma", "cutlass_80", "cutlass_90", "cutlass3x_", "gemv2T_kernel",
                      "gemv2N_kernel", "gemvx::", "splitKreduce_kernel", "at::native::", "pytorch_flash::")


def normalise(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip()


def library_signature(name: str) -> str | None:
    lowered = name.lower()
    return next((s for s in LIBRARY_SIGNATURES if s.lower() in lowered), None)


class MachineCode:
    """The kernels of the binaries compiled while grading (under `built`: the folders the candidate's stages may
    write) and of those the solution brought prebuilt (under `brought`: its own folder), disassembled on first
    use. Only the first are the solution's compiled work: a binary it brought may be a library's."""

    def __init__(self, built: Iterable[Path], brought: Iterable[Path] = ()):
        self.built, self.brought = [Path(r) for r in built], [Path(r) for r in brought]
        self._kernels: list[KernelCode] | None = None
        self._names: dict[str, list[KernelCode]] = {}
        self._built_names: set[str] = set()
        self.errors: list[str] = []

    @property
    def kernels(self) -> list[KernelCode]:
        if self._kernels is None:
            self._kernels = []
            for roots, built in ((self.built, True), (self.brought, False)):
                found, errors = collect_sass(roots)
                self._kernels += found
                self.errors += errors
                for kernel in found:
                    self._index(kernel, built)
        return self._kernels

    def _index(self, kernel: KernelCode, built: bool) -> None:
        from kernelbench.eval.integrity.cupti_kernels import demangle

        name = normalise(demangle(kernel.name.encode()))
        self._names.setdefault(name, []).append(kernel)
        if built:
            self._built_names.add(name)

    def exact(self, launched: str) -> list[KernelCode]:
        """The functions whose demangled name is the launched kernel's."""
        self.kernels  # noqa: B018 (collects on first use)
        return self._names.get(normalise(launched), [])

    def own(self, launched: str) -> bool:
        """Compiled from the solution's sources while grading: its function is in a binary the grading's writable
        folders hold, and its name is not a prebuilt library's."""
        self.kernels  # noqa: B018
        return library_signature(launched) is None and normalise(launched) in self._built_names

    def code_of(self, launched: str) -> list[KernelCode]:
        """The launched kernel's code: its function by exact name, else by its base identifier (a Triton or plain
        C name that the profiler shows differently)."""
        return self.exact(launched) or match_kernel(launched, self.kernels)


class NoMachineCode(MachineCode):
    """Where no binary can hold the kernels that ran (a CPU grading): nothing is the solution's compiled code."""

    def __init__(self) -> None:
        super().__init__([])
        self._kernels = []
