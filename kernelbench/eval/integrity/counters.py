"""Hardware-counter check: the timed call must move at least the bytes the problem has to read.

`measure_dram_bytes` runs one candidate call under Nsight Compute (`ncu`), restricted to an NVTX range around
the call, after an L2 flush, and sums `dram__bytes_read.sum` / `dram__bytes_write.sum` over the kernels in it.
Sub-sampling (every other row), answers kept from an earlier call, or work skipped by recognising inputs show up
as too few bytes, however they are coded. When ncu or the counters are not available, the reading carries the
error seen, and the check reports it as info rather than guessing.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kernelbench.eval.integrity.catalogue import finding
from kernelbench.results.run import Finding

CHECK = "dram_bytes"
NVTX_RANGE = "kb_counter_probe"
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
MIN_READ_FRACTION = 0.6


@dataclass
class CounterReading:
    read_bytes: float = 0.0
    write_bytes: float = 0.0
    kernels: list[str] = field(default_factory=list)
    input_bytes: int = 0
    error: str = ""


def ncu_command(solution: Path, problem_dir: Path, shape_index: int, seed: int, ncu: str) -> list[str]:
    return [ncu, "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", "--metrics", ",".join(METRICS), "--csv",
            "--page", "raw", "--print-units", "base", "--target-processes", "all",
            sys.executable, "-m", "kernelbench.eval.integrity.counter_probe", str(solution), str(problem_dir),
            str(shape_index), str(seed)]


def measure_dram_bytes(solution: Path, problem_dir: Path, shape_index: int = 0, seed: int = 7,
                       timeout_s: float = 240.0) -> CounterReading:
    ncu = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.path.isfile(p)), None)
    if ncu is None:
        return CounterReading(error="ncu not found on this machine")
    try:
        proc = subprocess.run(ncu_command(solution, problem_dir, shape_index, seed, ncu), check=False, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return CounterReading(error=f"ncu did not finish in {timeout_s:g} s")
    reading = parse_ncu_csv(proc.stdout)
    reading.input_bytes = _probe_input_bytes(proc.stdout + proc.stderr)
    if not reading.kernels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        reading.error = f"ncu exit {proc.returncode}, no kernel measured: {' | '.join(tail)[:600]}"
    return reading


def parse_ncu_csv(text: str) -> CounterReading:
    """Sum the metric columns of ncu's `--csv --page raw` output (one row per kernel, one units row)."""
    start = text.find('"ID"')
    reading = CounterReading()
    if start < 0:
        return reading
    for row in csv.DictReader(io.StringIO(text[start:])):
        name = row.get("Kernel Name", "")
        try:
            read, write = float(row[METRICS[0]].replace(",", "")), float(row[METRICS[1]].replace(",", ""))
        except (KeyError, ValueError, AttributeError):
            continue  # the units row
        reading.kernels.append(name)
        reading.read_bytes += read
        reading.write_bytes += write
    return reading


def _probe_input_bytes(text: str) -> int:
    for line in text.splitlines():
        if line.startswith("KB_PROBE_INPUT_BYTES="):
            return int(line.split("=", 1)[1])
    return 0


def bytes_check(reading: CounterReading, spec_bytes: float) -> list[Finding]:
    """Too few DRAM bytes read for the inputs the problem must read -> partial computation or memoisation."""
    if reading.error:
        return [finding(CHECK, 5, "hardware-counter check not run", severity="info", evidence=reading.error)]
    required = min(v for v in (reading.input_bytes, spec_bytes) if v) if (reading.input_bytes or spec_bytes) else 0
    evidence = (f"dram read {reading.read_bytes / 1e6:.2f} MB, written {reading.write_bytes / 1e6:.2f} MB over "
                f"{len(reading.kernels)} kernels; the problem must read {required / 1e6:.2f} MB")
    if required and reading.read_bytes < MIN_READ_FRACTION * required:
        return [finding(CHECK, 5, f"the call read {reading.read_bytes / required:.0%} of the bytes it must read "
                        "(sub-sampled or skipped work)", evidence=evidence)]
    return [finding(CHECK, 5, "DRAM traffic covers the problem's inputs", severity="info", evidence=evidence)]
