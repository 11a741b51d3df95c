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
import time
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

    def __init__(self, built: Iterable[Path], brought: Iterable[Path] = (), skip: Iterable[Path] = ()):
        self.built, self.brought = [Path(r) for r in built], [Path(r) for r in brought]
        self.skip = {Path(p) for p in skip}  # files under `built` that were not built there (a copy of what came)
        self._kernels: list[KernelCode] | None = None
        self._names: dict[str, list[KernelCode]] = {}
        self._built_names: set[str] = set()
        self.errors: list[str] = []
        self.costs: list[str] = []  # per binary read: sizes, functions, seconds (the grading's log shows them)
        self.read_s = 0.0

    @classmethod
    def of_kernels(cls, built: Iterable[KernelCode], brought: Iterable[KernelCode] = ()) -> MachineCode:
        """The machine code of kernels already disassembled: `built` compiled while grading, `brought` prebuilt."""
        code = cls([])
        code._kernels = []
        code._add(list(built), built=True)
        code._add(list(brought), built=False)
        return code

    @property
    def kernels(self) -> list[KernelCode]:
        if self._kernels is None:
            self._kernels = []
            started = time.monotonic()
            for roots, built in ((self.built, True), (self.brought, False)):
                found, errors = collect_sass(roots, skip=self.skip if built else (), costs=self.costs)
                self.errors += errors
                self._add(found, built)
            self.read_s = time.monotonic() - started
        return self._kernels

    def _add(self, kernels: list[KernelCode], built: bool) -> None:
        assert self._kernels is not None  # set to a list before kernels are added
        self._kernels += kernels
        for kernel in kernels:
            name = normalise(_demangled(kernel.name))
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

    def built_here(self, launched: str) -> bool:
        """Lenient `own`: the kernel's code is in a binary the solution built or brought, matched by exact name or
        by base identifier (a profiler may spell a template's name differently), and its name is not a prebuilt
        library's. Only for the rule that needs *some* kernel of the solution's to have run, never to clear a
        library-looking name."""
        return library_signature(launched) is None and bool(self.code_of(launched))

    def code_of(self, launched: str) -> list[KernelCode]:
        """The launched kernel's code: its function by exact name, else by its base identifier (a Triton or plain
        C name that the profiler shows differently)."""
        return self.exact(launched) or match_kernel(launched, self.kernels)


def _demangled(name: str) -> str:
    from kernelbench.eval.integrity.cupti_kernels import demangle

    return demangle(name.encode())


class NoMachineCode(MachineCode):
    """Where no binary can hold the kernels that ran (a CPU grading): nothing is the solution's compiled code."""

    def __init__(self) -> None:
        super().__init__([])
        self._kernels = []


# ------------------------------------------------------------------------------------------------- custom kernels

CUSTOM_CHECK = "custom_kernel"


def custom_kernel_findings(per_shape, code: MachineCode) -> list:
    """Where a deck's prompt asks for "a real custom kernel" (leak check `custom_kernel`): the work must run, on
    some shape at least, in kernels the solution compiled from its own sources. A solution none of whose kernels
    ran on any shape computed in prebuilt libraries only (cuBLAS, ATen): INVALID, with the kernels that carried
    the time. A shape on library kernels alone while others run the solution's own is reported (a warning): a
    dispatch by shape is the solution's to make. ATen's elementwise kernels (fills, copies, casts) are left out;
    on the CPU there is no machine code to read and nothing is decided."""
    from kernelbench.base.catalogue import finding
    from kernelbench.eval.integrity.sass import ATEN_ELEMENTWISE_RE

    shares: dict[int, tuple[float, float, dict[str, float]]] = {}
    for index, times in sorted(per_shape.items()):
        work = {n: t for n, t in times.items() if not n.startswith(("aten::", "python::"))
                and not ATEN_ELEMENTWISE_RE.search(n)}
        if not work:
            continue
        own = sum(t for n, t in work.items() if code.built_here(n))
        shares[index] = (own, sum(work.values()), work)
    if not shares:
        return []

    def evidence(index: int) -> str:
        own, total, work = shares[index]
        top = sorted(work.items(), key=lambda kv: -kv[1])[:3]
        return f"shape {index}: " + "; ".join(
            f"{n[:90]!r} {t / (total or 1):.0%} {'built from its sources' if code.built_here(n) else 'prebuilt'}"
            for n, t in top)

    if all(own == 0 for own, _, _ in shares.values()):
        return [finding(CUSTOM_CHECK, 1, "no kernel compiled from the solution's own sources ran on any shape: the "
                        "work ran in prebuilt libraries' kernels, and the problem asks for a real custom kernel",
                        evidence=" | ".join(evidence(i) for i in shares)[:3000])]
    return [finding(CUSTOM_CHECK, 1, f"shape {i}: only prebuilt libraries' kernels ran (the solution's own run on "
                    "other shapes)", evidence=evidence(i)[:1500], severity="warning")
            for i, (own, _, _) in shares.items() if own == 0]
