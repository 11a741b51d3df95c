"""What a grading ran on: GPU, driver, library versions, and the profile its ceilings come from."""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from kernelbench.base.models import Environment
from kernelbench.eval.protocol import DeviceInfo
from kernelbench.hardware import GpuProfile, match_profile


def profile_from_info(info: DeviceInfo) -> GpuProfile | None:
    """The hardware profile of the GPU a worker reported (its own L2 size replaces the table's)."""
    if not info.name:
        return None
    profile = match_profile(info.name, info.sm_count)
    if profile is not None and info.l2_bytes:
        profile = profile.model_copy(update={"l2_bytes": info.l2_bytes})
    return profile


def _driver_version() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


@functools.cache
def grader_hash() -> str:
    """sha256 over the kernelbench package's Python files (relative path and bytes, in path order): which grader
    graded a result, where a version string does not change with every fix."""
    import kernelbench

    root = Path(kernelbench.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def collect_environment(device: str, profile: GpuProfile | None, content_hash: str,
                        info: DeviceInfo | None = None) -> Environment:
    """Versions and machine; `info` is what the judge worker reported about the device (torch, GPU)."""
    import kernelbench

    info = info or DeviceInfo()
    gpu = info.name or ""
    return Environment(gpu_name=gpu or platform.processor() or "cpu", gpu_key=profile.key if profile else device,
                       driver=_driver_version() if gpu else "", cuda=info.cuda,
                       torch=info.torch or _version("torch"), triton=_version("triton"),
                       python=sys.version.split()[0], kernelbench=kernelbench.__version__,
                       problem_hash=content_hash, host=platform.node(), grader_hash=grader_hash())
