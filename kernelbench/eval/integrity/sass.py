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
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kernelbench.base.catalogue import Severity, finding
from kernelbench.base.models import Finding

CHECK = "fp8_sass"
BINARY_SUFFIXES = {".cubin", ".so", ".fatbin", ".o"}
FUNCTION_RE = re.compile(r"^\s*Function\s*:\s*(\S+)", re.MULTILINE)
FP8_MMA_RE = re.compile(r"\b(?:UTC)?Q(?:G)?MMA\b|\b\w*MMA\S*\.E[45]M[23]\b|\bmma\S*\.e[45]m[23]\b|"
                        r"\bwgmma\S*\.e[45]m[23]\b|\btcgen05\.mma\S*kind::f8f6f4")
ANY_MMA_RE = re.compile(r"\b(?:UTC)?[HQIO]?G?MMA\b|\bHMMA\.|\bIMMA\.|\bwgmma\.|\bmma\.sync\b|\btcgen05\.mma")
MMA_TYPE_RE = re.compile(r"\b(?:UTC)?[HQIO]G?MMA[.\w]*|\bwgmma[.\w]*|\bmma\.sync[.\w]*")
MIN_FP8_SHARE = 0.5  # on every shape, FP8-MMA kernels carry at least this share of the device time


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
    """Every binary under `roots`: by suffix, or by the ELF magic of a file nvcc wrote under another name."""
    files: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files += [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and
                      (p.suffix in BINARY_SUFFIXES or _is_elf(p))]
    return sorted(set(files))


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def collect_sass(roots: Iterable[Path], cuobjdump: str | None = None, skip: Iterable[Path] = (),
                 costs: list[str] | None = None) -> tuple[list[KernelCode], list[str]]:
    """Disassemble every binary under `roots` but those in `skip`; returns the kernels found and the errors met
    on the way. `costs` (optional) gets one line per binary read: its size, the listing's, the functions found and
    the seconds cuobjdump took (a grading's launch audit pays for them)."""
    skipped = {Path(p) for p in skip}
    tool = cuobjdump or shutil.which("cuobjdump") or _toolkit_tool("cuobjdump")
    kernels: list[KernelCode] = []
    errors: list[str] = []
    for path in compiled_binaries(roots):
        if Path(path) in skipped:
            continue
        if tool is None:
            errors.append("cuobjdump not found (CUDA toolkit missing)")
            break
        started = time.monotonic()
        proc = subprocess.run([tool, "-sass", str(path)], check=False, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 and not proc.stdout:
            errors.append(f"{path.name}: {proc.stderr.strip()[:200]}")
        functions = split_functions(proc.stdout, str(path))
        kernels += functions
        if costs is not None:
            costs.append(f"{path.name}: {_size(path)} bytes, listing {len(proc.stdout)} characters, "
                         f"{len(functions)} functions, {time.monotonic() - started:.1f} s")
        ptx = path.with_suffix(".ptx")
        if ptx.is_file():
            kernels += ptx_functions(ptx.read_text(errors="replace"), str(ptx))
    return kernels, errors


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


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
    """Judge one call's (or one grading's) launched kernels (name -> device time, or names) against their
    disassembly, as one shape (`fp8_shape_findings` is the per-shape rule the grader applies)."""
    times = dict(launched) if isinstance(launched, Mapping) else {n: 1.0 for n in launched}
    return fp8_shape_findings({0: times}, lambda name: match_kernel(name, kernels), errors or [], required,
                              enforce=True, label=lambda _: "the kernels that ran")


# a kernel whose code has no MMA and fewer fused multiply-adds than this only moves data (a pad, a fill, a cast, a
# scale); a GEMM on CUDA cores unrolls far more
MIN_FMA = 64
FMA_RE = re.compile(r"\b(?:FFMA|HFMA2|DFMA|FFMA2)\b|\bfma\.rn\.")
# ATen's own elementwise kernels (fills, copies, casts, pointwise arithmetic): prebuilt, so their code is not read,
# and none of them reduces over K; ATen's reductions and every other unreadable kernel count as arithmetic
ATEN_ELEMENTWISE_RE = re.compile(r"at::native::(?:\(anonymous namespace\)::)?(?:vectorized_|unrolled_)?"
                                 r"elementwise_kernel|at::native::\w*copy\w*kernel|FillFunctor")


@dataclass
class ShapeShare:
    """One shape's kernels sorted by what their code holds, with device time (us)."""

    fp8: dict[str, tuple[float, list[str]]]
    other_mma: dict[str, tuple[float, list[str]]]
    unknown: dict[str, float]
    plain: dict[str, float]          # no MMA, but enough fused multiply-adds to be matrix work on CUDA cores
    moves: dict[str, float] = field(default_factory=dict)  # data movement only: left out of the denominator

    @property
    def device_time(self) -> float:
        """The arithmetic kernels' time (the rule's denominator): every kernel but those that only move data."""
        return (sum(t for t, _ in self.fp8.values()) + sum(t for t, _ in self.other_mma.values())
                + sum(self.unknown.values()) + sum(self.plain.values()))

    @property
    def share(self) -> float:
        total = self.device_time
        return sum(t for t, _ in self.fp8.values()) / total if total > 0 else 0.0

    @property
    def passes(self) -> bool:
        return bool(self.fp8) and self.share >= MIN_FP8_SHARE


def classify(times: Mapping[str, float], code_of, pattern: re.Pattern[str]) -> ShapeShare:
    share = ShapeShare({}, {}, {}, {})
    for name, t in times.items():
        if name.startswith("aten::") or name.startswith("python::"):  # CPU-side op names, not kernels
            continue
        code = code_of(name)
        if not code:
            (share.moves if ATEN_ELEMENTWISE_RE.search(name) else share.unknown)[name] = t
        elif any(k.required(pattern) for k in code):
            share.fp8[name] = (t, sorted({i for k in code for i in k.required(pattern)}))
        elif any(k.mma for k in code):
            share.other_mma[name] = (t, sorted({i for k in code for i in k.mma}))
        elif max(len(FMA_RE.findall(k.text)) for k in code) >= MIN_FMA:
            share.plain[name] = t
        else:
            share.moves[name] = t
    return share


def fp8_shape_findings(per_shape: Mapping[int, Mapping[str, float]], code_of, errors: list[str],
                       required: list[str] | None, *, enforce: bool, label=None) -> list[Finding]:
    """The FP8 rule, one written rule for every case: on every shape, kernels holding FP8 tensor-core
    instructions carry at least MIN_FP8_SHARE of the device time of the shape's arithmetic kernels: every kernel
    but those that only move data (ATen's elementwise kernels, and kernels whose code holds no MMA and fewer than
    MIN_FMA fused multiply-adds: pads, fills, casts). A GEMM on other tensor-core instructions, on CUDA cores or in
    a library whose code cannot be read counts against it. `enforce`: the problem requires FP8 tensor cores (a failing shape
    is an error); otherwise its rules allow another path and the shares are reported (warnings).
    `code_of(name)`: the launched kernel's code (integrity.machine_code)."""
    pattern = required_pattern(required)
    label = label or (lambda index: f"shape {index}")
    shares = {i: classify(times, code_of, pattern) for i, times in sorted(per_shape.items())}
    shares = {i: s for i, s in shares.items() if s.fp8 or s.other_mma or s.unknown or s.plain or s.moves}
    if not shares:
        return [finding(CHECK, 14, "no kernel launch was recorded, so FP8 tensor-core use cannot be shown",
                        evidence="; ".join(errors), severity="error" if enforce else "warning")]
    found = [_failing_shape(label(i), s, errors, enforce) for i, s in shares.items() if not s.passes]
    summary = "; ".join(f"{label(i)}: {s.share:.0%}" for i, s in shares.items())
    found.append(finding(CHECK, 14, f"share of device time in FP8-MMA kernels (rule: at least "
                         f"{MIN_FP8_SHARE:.0%} on every shape): {summary}", severity="info",
                         evidence=" | ".join(f"{label(i)}: {_kernels_evidence(s)}" for i, s in shares.items())[:3000]))
    return found


def _failing_shape(where: str, share: ShapeShare, errors: list[str], enforce: bool) -> Finding:
    severity: Severity = "error" if enforce else "warning"
    if share.other_mma:
        name, (t, instr) = max(share.other_mma.items(), key=lambda kv: kv[1][0])
        message = (f"{where}: the GEMM ran on non-FP8 tensor-core instructions (fp8 inputs up-cast): FP8-MMA kernels "
                   f"carry {share.share:.0%} of its device time")
        return finding(CHECK, 14, message, severity=severity, evidence=_kernels_evidence(share))
    if not share.fp8:
        # kernels with no code to read (a library's, prebuilt) are not shown to lack FP8 MMA, only not shown to
        # have it: the evidence keeps the two apart, the verdict is the same (FP8 use must be shown)
        parts = [f"kernels whose code is in no binary the solution built or brought (a library's, or removed "
                 f"before it could be read): {', '.join(sorted(share.unknown)[:5])}" if share.unknown else "",
                 f"kernels whose code holds no MMA: {', '.join(sorted({**share.plain, **share.moves})[:5])}"
                 if share.plain or share.moves else "",
                 f"errors: {'; '.join(errors[:3])}" if errors else ""]
        return finding(CHECK, 14, f"{where}: no kernel that ran is shown to hold FP8 tensor-core instructions",
                       severity=severity, evidence="; ".join(p for p in parts if p) or "no kernel matched")
    return finding(CHECK, 14, f"{where}: FP8-MMA kernels carry only {share.share:.0%} of the device time",
                   severity=severity, evidence=_kernels_evidence(share))


def _kernels_evidence(share: ShapeShare) -> str:
    total = share.device_time or 1.0
    rows = [(t, f"{name[:100]!r} {t / total:.0%} FP8 ({', '.join(instr)})") for name, (t, instr) in share.fp8.items()]
    rows += [(t, f"{name[:100]!r} {t / total:.0%} non-FP8 MMA ({', '.join(instr)})")
             for name, (t, instr) in share.other_mma.items()]
    rows += [(t, f"{name[:100]!r} {t / total:.0%} code not found") for name, t in share.unknown.items()]
    rows += [(t, f"{name[:100]!r} {t / total:.0%} no MMA, multiply-adds") for name, t in share.plain.items()]
    rows += [(0.0, f"{name[:100]!r} moves data (left out)") for name in list(share.moves)[:2]]
    return "; ".join(text for _, text in sorted(rows, key=lambda r: -r[0])[:5]) or "no tensor-core kernel"
