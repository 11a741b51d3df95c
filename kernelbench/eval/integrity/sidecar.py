"""C++/CUDA sources of a solution (inline strings given to load_inline, or files beside it): library calls,
persisting-L2 windows, process control. Comments are blanked first so prose never trips a rule."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding
from kernelbench.eval.integrity import tables
from kernelbench.eval.integrity.names import Symbols, fold_string
from kernelbench.eval.integrity.rules import Rules

CHECK = "sidecar_lint"
SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl", ".ptx"}
CODE_HINT_RE = re.compile(r"#include|__global__|__device__|torch::|at::Tensor|extern\s+\"C\"|asm\s*(volatile)?\s*\(|"
                          r"\.entry\s|\.version\s+\d")
COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
LINK_RE = re.compile(r"-l\s*(cublas\w*|cudnn\w*|cublasLt)\b|lib(cublas|cudnn)\w*\.so")

# (pattern, class, severity, why) that apply whatever the problem forbids.
CPP_RULES: list[tuple[re.Pattern[str], int, str, str]] = [
    (tables.L2_PERSIST_RE, 13, "error", "sets a persisting-L2 access policy (operands survive the L2 flush)"),
    (re.compile(r"\bcudaDeviceSetLimit\s*\(\s*cudaLimitPersisting"), 13, "error", "reserves persisting L2"),
    (re.compile(r"\bcudaStreamCreate\w*|\bgetStreamFromPool\b|\bcudaStreamNonBlocking\b"), 9, "warning",
     "creates a side stream (the grader synchronises the whole device)"),
    (re.compile(r"(?<![\w:.])(?:std::)?(?:exit|_exit|_Exit|quick_exit|abort)\s*\("), 12, "error",
     "ends the process from native code"),
    (re.compile(r"(?<![\w:.])(?:fork|vfork|system|popen|execv\w*|execl\w*|posix_spawn\w*)\s*\("), 12, "error",
     "starts processes from native code"),
    (re.compile(r"(?<![\w:.])(?:remove|unlink|rename|rmdir|chmod)\s*\(\s*\""), 12, "error",
     "changes files from native code"),
    (re.compile(r"\bfopen\s*\([^)]*\"[wa]\+?b?\""), 12, "error", "writes files from native code"),
    (re.compile(r"\bdlsym\s*\(|\bRTLD_NEXT\b|\bLD_PRELOAD\b"), 11, "error",
     "interposes symbols (can replace the grader's CUDA calls)"),
    (re.compile(r"\bcudaEventElapsedTime\b|\bcudaDeviceSynchronize\s*=|\bcuEventElapsedTime\b"), 11, "warning",
     "touches the timing API"),
    (re.compile(r"\bcudaMallocManaged\b"), 16, "warning", "uses managed memory"),
]


def sidecar_files(folder: Path) -> list[Path]:
    """C++/CUDA sources that sit beside a solution (not recursive: a run folder keeps its workspace below)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SOURCE_SUFFIXES
                  and p.stat().st_size < 5_000_000)


def inline_sources(tree: ast.AST, symbols: Symbols) -> list[tuple[str, int]]:
    """Every string in the module that looks like C++/CUDA/PTX source, with the line it starts on."""
    found, seen = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_HINT_RE.search(node.value):
            found.append((node.value, node.lineno))
            seen.add(node.value)
        elif isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call)):
            text = fold_string(node, symbols)
            if text and text not in seen and CODE_HINT_RE.search(text):
                found.append((text, node.lineno))
                seen.add(text)
    return found


def lint_cpp(text: str, origin: str, first_line: int, rules: Rules) -> list[Finding]:
    """Findings for one C++/CUDA source; evidence points at origin:line."""
    code = COMMENT_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    findings, seen = [], set()

    def report(match: re.Match[str], klass: int, severity: str, why: str) -> None:
        line = code.count("\n", 0, match.start())
        if (line, why) in seen:
            return
        seen.add((line, why))
        snippet = text.splitlines()[line].strip()[:160] if line < len(text.splitlines()) else ""
        findings.append(finding(CHECK, klass, f"{match.group(0).strip()}: {why}", severity=severity,  # type: ignore
                                evidence=f"{origin}:{first_line + line}: {snippet}", file=origin,
                                line=first_line + line))

    for pattern, why in rules.cpp_patterns:
        for match in pattern.finditer(code):
            report(match, 1, "error", f"library call in native code ({why})")
    streaming = tables.l2_window_is_streaming(code)
    for pattern, klass, severity, why in CPP_RULES:
        if klass == 13 and streaming:
            severity, why = "warning", "sets an L2 access-policy window with streaming or normal properties only " \
                                       "(evict-first: keeps nothing through the flush)"
        for match in pattern.finditer(code):
            report(match, klass, severity, why)
    for match in re.finditer(r"#\s*include\s*[<\"]([^>\"]+)[>\"]", code):
        _check_include(match, rules, report)
    return findings


def _check_include(match: re.Match[str], rules: Rules, report) -> None:
    header = match.group(1).lower()
    if rules.families and re.search(r"cublas|cudnn|flash|cutlass/gemm/device|cutlass/gemm/kernel/default", header):
        report(match, 1, "error", f"includes a library header ({header}) for work the problem forbids")
    for text, _, why in rules.kernel_patterns:
        if text.lower() in header and len(text) > 3:
            report(match, 1, "error", f"includes {header} ({why})")


def lint_link_flags(tree: ast.AST, symbols: Symbols, rules: Rules, origin: str) -> list[Finding]:
    """`extra_ldflags=['-lcublas']` and the like: linking the library is the bypass."""
    findings: list[Finding] = []
    if not rules.families:
        return findings
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
            match = LINK_RE.search(node.value)
            if match:
                findings.append(finding(CHECK, 1, f"links {match.group(0)} (a library the problem forbids)",
                                        evidence=f"{origin}:{node.lineno}: {node.value[:80]}", file=origin,
                                        line=node.lineno))
    return findings
