"""What a grading ran on: GPU, driver, library versions, and the profile its ceilings come from."""

from __future__ import annotations

import platform
import subprocess
import sys

from kernelbench.hardware import GpuProfile, detect_profile
from kernelbench.results.run import Environment


def grading_profile(device: str) -> GpuProfile | None:
    return detect_profile() if device == "cuda" else None


def _driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:
        return ""


def collect_environment(device: str, profile: GpuProfile | None, content_hash: str) -> Environment:
    import torch

    import kernelbench

    gpu = torch.cuda.get_device_name(0) if device == "cuda" and torch.cuda.is_available() else ""
    return Environment(gpu_name=gpu or platform.processor() or "cpu", gpu_key=profile.key if profile else device,
                       driver=_driver_version() if gpu else "", cuda=torch.version.cuda or "",
                       torch=torch.__version__, triton=_version("triton"), python=sys.version.split()[0],
                       kernelbench=kernelbench.__version__, problem_hash=content_hash, host=platform.node())
