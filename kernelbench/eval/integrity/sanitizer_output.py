"""Reading NVIDIA compute-sanitizer's plain-text report (memcheck and racecheck).

Every line the tool prints starts with `========= `. A report is a header line (`Invalid __global__ read of size
4 bytes`, `Error: Race reported between Write access at K+0x1f0 in f.cu:12`) followed by continuation lines,
indented after the prefix (`    at K(float *, int)+0x90`, `    by thread (0,0,0) in block (0,0,0)`, `    and Read
access at ... [16 hazards]`, `        Device Frame: ...`). The run ends with a summary (`ERROR SUMMARY: 2 errors`,
`RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)`).

Two location forms exist: the current one, `at NAME(args)+0xOFFSET[ in file:line]`, and the older one, `at 0xOFFSET
in NAME(args)`. For memcheck the `at` line names the function where the access happened, which may be a device
function inlined into the kernel; the outermost `Device Frame:` names the kernel, so that is the report's kernel
when present. Racecheck reports name the function of each access.

The lines come from a process the candidate shares its output with, so this module only reads text; what is
decided from it (kernelbench.eval.stages.sanitizer) never trusts a line to clear the candidate, only to accuse it:
a summary that counts more errors than the kept reports show is itself a report (`unattributed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Tool = Literal["memcheck", "racecheck"]
Severity = Literal["error", "warning"]

PREFIX = "========="
MAX_EVIDENCE_LINES = 12
MAX_LINE_CHARS = 400
UNATTRIBUTED = "(not attributed: the tool counted errors whose reports were not kept)"
HOST = "(host API call)"

_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([\d,]+)\s+errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*([\d,]+)\s+hazards?\s+displayed\s*\(\s*([\d,]+)\s+errors?,\s*"
                           r"([\d,]+)\s+warnings?\s*\)")
_RACE_HEADER = re.compile(r"^(Error|Warning): Race reported between (\w+) access at (.*)$")
_RACE_PARTNER = re.compile(r"^and (\w+) access at (.*?)(?:\s*\[([\d,]+) hazards?\])?$")
_HAZARDS = re.compile(r"\[([\d,]+) hazards?\]\s*$")
# the tool's own notices, which are not reports about the program's kernels
_NOTICES = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned",
            "Error: process didn't terminate", "Warning: Maximum number of", "Warning: Detected overflow",
            "Note:", "This tool is deprecated")


@dataclass
class Report:
    """One report of the tool: what happened (`kind`), in which kernel, and the tool's lines as evidence."""

    tool: Tool
    kind: str
    kernel: str
    severity: Severity = "error"     # racecheck's own level (error | warning); memcheck reports are errors
    lines: list[str] = field(default_factory=list)
    hazards: int = 1                 # racecheck: the hazards the report stands for


@dataclass
class ToolOutput:
    tool: Tool
    reports: list[Report] = field(default_factory=list)
    summary_errors: int | None = None    # the summary's error count (None: no summary line: the run did not end)
    summary_warnings: int = 0

    @property
    def finished(self) -> bool:
        return self.summary_errors is not None


def parse(tool: Tool, text: str) -> ToolOutput:
    """The reports and summary of one run of `tool` (memcheck | racecheck) from its plain-text output; lines
    without the tool's prefix (the program's own output, interleaved) are skipped."""
    out = ToolOutput(tool)
    block: list[str] = []
    for raw in text.splitlines():
        stripped = raw.lstrip()
        if not stripped.startswith(PREFIX):
            continue
        body = stripped[len(PREFIX):]
        if not body.strip():  # a blank tool line ends a report
            _close(out, block)
            block = []
        elif body.startswith(("  ", "\t")):  # a continuation of the report under way
            if block:
                block.append(body.strip())
        else:
            _close(out, block)
            block = [body.strip()]
            _read_summary(out, body.strip())
    _close(out, block)
    _add_unattributed(out)
    return out


def _read_summary(out: ToolOutput, line: str) -> None:
    """The last summary wins: the tool prints its own after the program has ended."""
    if match := _ERROR_SUMMARY.search(line):
        out.summary_errors = _int(match.group(1))
    elif match := _RACE_SUMMARY.search(line):
        out.summary_errors, out.summary_warnings = _int(match.group(2)), _int(match.group(3))


def _close(out: ToolOutput, block: list[str]) -> None:
    if not block or block[0].startswith(_NOTICES):
        return
    header = block[0]
    race = _RACE_HEADER.match(header)
    if race is not None:
        out.reports.append(_race_report(out.tool, block, race))
    else:
        out.reports.append(Report(out.tool, _bounded(header), _memcheck_kernel(block), "error", _evidence(block)))


def _race_report(tool: Tool, block: list[str], race: re.Match) -> Report:
    level, access, where = race.groups()
    partners = [m for line in block[1:] if (m := _RACE_PARTNER.match(line))]
    kind = f"Race reported between {access} access"
    if partners:
        kind += f" and {partners[0].group(1)} access"
    hazards = sum(_int(m.group(3)) for m in partners if m.group(3)) or 1
    severity: Severity = "warning" if level == "Warning" else "error"
    return Report(tool, kind, function_name(where), severity, _evidence(block), hazards)


def _memcheck_kernel(block: list[str]) -> str:
    """The outermost device frame (the kernel) where the report has frames, else the `at` function, else the
    host API call the report is about."""
    frames = [line.split(":", 1)[1].strip() for line in block if line.startswith("Device Frame:")]
    if frames:
        return function_name(frames[-1])
    at = next((line[3:] for line in block if line.startswith("at ")), None)
    return function_name(at) if at is not None else HOST


def function_name(location: str) -> str:
    """The function of a location in either of the tool's forms, without offset or source line:
    `K(float *, int)+0x90 in f.cu:12` and `0x90 in K(float*, int)` both give the name with its arguments."""
    text = _HAZARDS.sub("", location).strip()
    if re.match(r"^0x[0-9a-fA-F]+ in ", text):  # the older form: offset first
        text = text.split(" in ", 1)[1]
    else:
        text = re.sub(r"\s+in\s+\S+:\d+\s*$", "", text)  # a trailing source file and line
        text = re.sub(r"\+0x[0-9a-fA-F]+\s*$", "", text)
        # the oldest frames repeat the name with its offset: "K(int*) (K(int*) : 0xa0)"
        text = re.sub(r"\s+\((?:[^()]|\([^()]*\))*\s:\s*0x[0-9a-fA-F]+\)\s*$", "", text)
    return _bounded(" ".join(text.split()))


def _evidence(block: list[str]) -> list[str]:
    """The report's lines, bounded in count and length (backtraces run long; the first lines say what and where)."""
    kept = [_bounded(line) for line in block[:MAX_EVIDENCE_LINES]]
    if len(block) > MAX_EVIDENCE_LINES:
        kept.append(f"... {len(block) - MAX_EVIDENCE_LINES} more lines")
    return kept


def _add_unattributed(out: ToolOutput) -> None:
    """Errors the summary counts beyond the error reports kept (output lost to a flood, or cut by --print-limit:
    the latter only where the kept reports are fewer than the limit's share; see the stage)."""
    shown = sum(1 for r in out.reports if r.severity == "error")
    if out.summary_errors is not None and out.summary_errors > 0 and shown == 0:
        out.reports.append(Report(out.tool, f"{out.summary_errors} errors counted by the tool's summary, none of "
                                  "their reports kept in its output", UNATTRIBUTED, "error",
                                  [f"summary: {out.summary_errors} errors"]))


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS - 3] + "..."


def _int(text: str) -> int:
    return int(text.replace(",", ""))
