"""The fp8 GEMM leak, closed: prove that the kernels which ran hold FP8 tensor-core instructions.

How the code of the kernels that ran is found: the grader points TRITON_CACHE_DIR and TORCH_EXTENSIONS_DIR of the
grading worker at folders it owns (`build_dirs(root)` / `build_env(root)`), so every Triton kernel and every
`torch.utils.cpp_extension` module compiled while grading lands there as a .cubin or .so. `collect_sass` runs
`cuobjdump -sass` over all of them (plus any extra binaries, e.g. sidecar .so/.cubin files or .so files mapped
into the worker) and splits the listing per function. `fp8_sass_check` then matches the profiler's launched
kernel names against those functions and requires that the kernels carrying the GEMM's time contain FP8 MMA
instructions (QGMMA on sm_90a, QMMA/HMMA with E4M3/E5M2 operands, UTCQMMA on Blackwell, or `mma`/`wgmma` with
e4m3/e5m2 in PTX). A bf16 GEMM on up-cast inputs shows HGMMA/HMMA.BF16 instead, and is INVALID with that evidence.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding

CHECK = "fp8_sass"
BINARY_SUFFIXES = {".cubin", ".so", ".fatbin", ".o"}
FUNCTION_RE = re.compile(r"^\s*Function\s*:\s*(\S+)", re.MULTILINE)
FP8_MMA_RE = re.compile(r"\b(?:UTC)?Q(?:G)?MMA\b|\b\w*MMA\S*\.E[45]M[23]\b|\bmma\S*\.e[45]m[23]\b|"
                        r"\bwgmma\S*\.e[45]m[23]\b|\btcgen05\.mma\S*kind::f8f6f4")
ANY_MMA_RE = re.compile(r"\b(?:UTC)?[HQIO]?G?MMA\b|\bHMMA\.|\bIMMA\.|\bwgmma\.|\bmma\.sync\b|\btcgen05\.mma")
MMA_TYPE_RE = re.compile(r"\b(?:UTC)?[HQIO]G?MMA[.\w]*|\bwgmma[.\w]*|\bmma\.sync[.\w]*")
MIN_FP8_SHARE = 0.5  # FP8-MMA kernels must carry at least this share of the candidate's device time


@dataclass
class KernelCode:
    name: str          # function name as in the binary (mangled for C++)
    source: str        # the binary it came from
    text: str          # SASS (or PTX) listing

    @property
    def fp8_mma(self) -> list[str]:
        return self.required(FP8_MMA_RE)

    def required(self, pattern: re.Pattern[str]) -> list[str]:
        return sorted({m.group(0) for m in pattern.finditer(self.text)})[:4]

    @property
    def mma(self) -> list[str]:
        return sorted({m.group(0) for m in MMA_TYPE_RE.finditer(self.text)})[:4]


def build_dirs(root: Path) -> dict[str, Path]:
    """The grader-owned compile caches for one grading."""
    root = Path(root)
    return {"TRITON_CACHE_DIR": root / "triton", "TORCH_EXTENSIONS_DIR": root / "torch_extensions",
            "TORCHINDUCTOR_CACHE_DIR": root / "inductor"}


def build_env(root: Path) -> dict[str, str]:
    """Environment entries to give the grading worker so every kernel it compiles lands under `root`."""
    dirs = build_dirs(root)
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return {key: str(path) for key, path in dirs.items()}


def compiled_binaries(roots: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files += [p for p in root.rglob("*") if p.is_file() and p.suffix in BINARY_SUFFIXES]
    return sorted(set(files))


def collect_sass(roots: Iterable[Path], cuobjdump: str | None = None) -> tuple[list[KernelCode], list[str]]:
    """Disassemble every binary under `roots`; returns the kernels found and the errors met on the way."""
    tool = cuobjdump or shutil.which("cuobjdump") or _toolkit_tool("cuobjdump")
    kernels: list[KernelCode] = []
    errors: list[str] = []
    for path in compiled_binaries(roots):
        if tool is None:
            errors.append("cuobjdump not found (CUDA toolkit missing)")
            break
        proc = subprocess.run([tool, "-sass", str(path)], check=False, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 and not proc.stdout:
            errors.append(f"{path.name}: {proc.stderr.strip()[:200]}")
        kernels += split_functions(proc.stdout, str(path))
        ptx = path.with_suffix(".ptx")
        if ptx.is_file():
            kernels += ptx_functions(ptx.read_text(errors="replace"), str(ptx))
    return kernels, errors


def _toolkit_tool(name: str) -> str | None:
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / name).is_file():
            return str(Path(home) / "bin" / name)
    return None


def split_functions(listing: str, source: str) -> list[KernelCode]:
    """Split a `cuobjdump -sass` listing into one KernelCode per `Function : name` section."""
    marks = list(FUNCTION_RE.finditer(listing))
    return [KernelCode(m.group(1), source, listing[m.end(): marks[i + 1].start() if i + 1 < len(marks) else None])
            for i, m in enumerate(marks)]


def ptx_functions(ptx: str, source: str) -> list[KernelCode]:
    marks = list(re.finditer(r"\.entry\s+(\w+)", ptx))
    return [KernelCode(m.group(1), source, ptx[m.end(): marks[i + 1].start() if i + 1 < len(marks) else None])
            for i, m in enumerate(marks)]


def base_identifier(kernel_name: str) -> str:
    """`void ns::fp8_gemm<128>(float*, ...)` -> `fp8_gemm` (what a mangled or Triton name contains)."""
    name = re.sub(r"^(void|__global__)\s+", "", kernel_name.strip())
    name = name.split("(")[0]
    depth, out = 0, []
    for ch in name:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    return "".join(out).split("::")[-1].strip()


def match_kernel(launched: str, kernels: list[KernelCode]) -> list[KernelCode]:
    ident = base_identifier(launched)
    if not ident:
        return []
    exact = [k for k in kernels if k.name == launched or k.name == ident]
    return exact or [k for k in kernels if re.search(rf"(?<![A-Za-z]){re.escape(ident)}(?![a-z])", k.name)]


def required_pattern(mnemonics: list[str] | None) -> re.Pattern[str]:
    """problem.yaml's `required_sass` regexes for one arch (matched as SASS mnemonics), or the FP8 default."""
    if not mnemonics:
        return FP8_MMA_RE
    return re.compile("|".join(rf"(?<![A-Z])(?:{m})(?=[.\s]|$)" for m in mnemonics), re.MULTILINE)


def fp8_sass_check(launched: Mapping[str, float] | Iterable[str], kernels: list[KernelCode],
                   errors: list[str] | None = None, required: list[str] | None = None) -> list[Finding]:
    """Judge the launched kernels (name -> device time, or names) against their disassembly.

    `required`: the problem's `required_sass` mnemonics for this GPU's arch (default: any FP8 MMA form)."""
    pattern = required_pattern(required)
    times = dict(launched) if isinstance(launched, Mapping) else {n: 1.0 for n in launched}
    times = {n: t for n, t in times.items() if not n.startswith("aten::")}  # CPU-side op names, not kernels
    if not times:
        return [finding(CHECK, 14, "no kernel launch was recorded, so FP8 tensor-core use cannot be shown",
                        evidence="; ".join(errors or []))]
    fp8, other_mma, unknown, plain = {}, {}, {}, {}
    for name, t in times.items():
        code = match_kernel(name, kernels)
        if not code:
            unknown[name] = t
        elif any(k.required(pattern) for k in code):
            fp8[name] = (t, sorted({i for k in code for i in k.required(pattern)}))
        elif any(k.mma for k in code):
            other_mma[name] = (t, sorted({i for k in code for i in k.mma}))
        else:
            plain[name] = t
    return _verdict(times, fp8, other_mma, unknown, plain, errors or [])


def _verdict(times, fp8, other_mma, unknown, plain, errors) -> list[Finding]:
    total = sum(times.values()) or 1.0
    share = sum(t for t, _ in fp8.values()) / total
    if other_mma:
        name, (t, instr) = max(other_mma.items(), key=lambda kv: kv[1][0])
        return [finding(CHECK, 14, "the GEMM ran on non-FP8 tensor-core instructions (fp8 inputs up-cast)",
                        evidence=f"kernel {name[:120]!r} ({t / total:.0%} of device time) holds {', '.join(instr)}"
                                 f" and no FP8 MMA; FP8-MMA kernels: {sorted(fp8) or 'none'}")]
    if not fp8:
        # kernels with no code to read (a library's, prebuilt) are not shown to lack FP8 MMA, only not shown to
        # have it: the evidence keeps the two apart, the verdict is the same (FP8 use must be shown)
        parts = [f"kernels without code in the grader's build dirs, whose instructions cannot be read (library or "
                 f"prebuilt): {', '.join(sorted(unknown)[:5])}" if unknown else "",
                 f"kernels whose code holds no MMA: {', '.join(sorted(plain)[:5])}" if plain else "",
                 f"errors: {'; '.join(errors[:3])}" if errors else ""]
        return [finding(CHECK, 14, "no kernel that ran is shown to hold FP8 tensor-core instructions",
                        evidence="; ".join(p for p in parts if p) or "no kernel matched")]
    if share < MIN_FP8_SHARE:
        return [finding(CHECK, 14, f"FP8-MMA kernels carry only {share:.0%} of the device time",
                        evidence=f"FP8: {sorted(fp8)}; unverified: {sorted(unknown)[:5]}")]
    name, (t, instr) = max(fp8.items(), key=lambda kv: kv[1][0])
    return [finding(CHECK, 14, "FP8 tensor-core instructions found in the kernels that ran", severity="info",
                    evidence=f"kernel {name[:120]!r} ({share:.0%} of device time in FP8-MMA kernels): "
                             f"{', '.join(instr)}")]
