"""What every stage process holds (`StageContext`) and the steps every role shares: loading the problem, building
the model of a shape, reading the inputs the judge published, recording what a call launched."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench.eval.protocol import LIBRARY_LINES, POLL_S, DeviceInfo, Line, StageJob


@dataclass(frozen=True)
class StageContext:
    """One stage's job, torch, the device, the problem's reference module and the line graded (with its module,
    None for the eager line, which is the reference itself)."""

    job: StageJob
    torch: ModuleType
    device: Any                  # torch.device
    reference: ModuleType
    line: Line
    candidate: ModuleType | None = None
    pacer: Any = None            # a bench stage's kernelbench.eval.pacing.PacerClient, when the grader paces it

    def with_line(self, line: Line, candidate: ModuleType | None) -> StageContext:
        return replace(self, line=line, candidate=candidate)

    def build_model(self, shape_index: int, shape: dict[str, Any]):
        return build_model(self.torch, self.device, self.reference, self.candidate, self.job.model_seeds[shape_index],
                           shape, compiled=self.line == "compiled")

    def inputs(self, case_id: str) -> list:
        return wait_for_inputs(self.job.input_path(case_id), self.device, self.job.input_wait_s)

    def problem_code(self) -> list[Path]:
        """The problem files whose code must not run inside a candidate's call (none when the line graded is the
        reference or a library line itself)."""
        if self.candidate is None or self.line in LIBRARY_LINES:
            return []
        return problem_code_files(Path(self.job.problem_dir))


def problem_code_files(problem: Path) -> list[Path]:
    """The problem's reference and SOTA modules (what the launch audit watches for inside a call)."""
    from kernelbench.problems.loader import code_files

    return code_files(problem)


def open_stage(job: StageJob) -> StageContext:
    """Trusted steps only: torch, the math library's kernels chosen from one thread (before the reference or a
    candidate computes anything), the problem's reference loaded through the problems package."""
    import torch

    from kernelbench.eval.portable import compare, guards, timing  # noqa: F401  (bound before candidate code)
    from kernelbench.problems.loader import load_reference

    guards.warm_math_library()
    reference = load_reference(Path(job.problem_dir))
    return StageContext(job=job, torch=torch, device=torch.device(job.device), reference=reference, line=job.line)


def device_info(torch, device) -> DeviceInfo:
    info = DeviceInfo(torch=torch.__version__, cuda=torch.version.cuda or "")
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info = info.model_copy(update=dict(name=props.name, sm_count=props.multi_processor_count,
                                           arch=f"sm_{props.major}{props.minor}",
                                           l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
                                           uuid=nvml_uuid(getattr(props, "uuid", None))))
    return info


def nvml_uuid(uuid: object) -> str | None:
    """torch's UUID of a GPU as NVML names it: "GPU-" and the UUID in lower case (torch's text of it, a
    `_CUuuid`, leaves the prefix out)."""
    if uuid is None or not str(uuid):
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text.lower()}"


def build_model(torch, device, reference: ModuleType, candidate: ModuleType | None, seed: int,
                shape: dict[str, Any], *, compiled: bool = False):
    """The line's model of one shape, with exactly the reference's weights (drawn from `seed`)."""
    from kernelbench.problems.loader import bind_shape, init_arguments, model_class

    bind_shape(reference, shape)
    args, kwargs = init_arguments(reference, shape)
    ref_model = build_reference(torch, reference.Model, args, kwargs, seed, device)
    if candidate is None:
        model = ref_model
    else:
        cls = model_class(candidate, reference)
        torch.manual_seed(seed)
        model = cls(*args, **kwargs)
        model = load_weights(torch, model, ref_model, reference, cls, (args, kwargs), seed, device)
        del ref_model
    model = model.to(device).eval()
    if not compiled:
        return model
    from kernelbench.problems.baselines import COMPILED_LINE_MODE

    return torch.compile(model, mode=COMPILED_LINE_MODE)


def load_weights(torch, model, ref_model, reference: ModuleType, cls: type, arguments: tuple[list, dict], seed: int,
                 device):
    """The reference's state_dict, loaded strictly; for a layout whose solutions own their weights by seed
    (Stanford KernelBench: Model and ModelNew are each built right after the same seed), a candidate whose parameter
    names differ is built the way the reference was, under the reference's seed."""
    try:
        model.load_state_dict(ref_model.state_dict(), strict=True)
        return model
    except RuntimeError:
        from kernelbench.problems.loader import weights_by_seed

        if not weights_by_seed(reference):
            raise
    return build_reference(torch, cls, *arguments, seed, device)


def build_reference(torch, cls: type, args: list, kwargs: dict[str, Any], seed: int, device):
    """The reference's parameters, drawn on the grading device: gigabytes of MoE weights drawn by the CPU
    generator cost seconds in every stage of every shape. Every process of a grading draws them the same way
    (same seed, same device), so the candidate still loads exactly the judge's weights; a reference whose
    __init__ cannot run under a CUDA default device falls back to the CPU, again the same in every process.

    Running out of GPU memory is no such property of the reference: it depends on what else holds the GPU at
    that moment, so it is raised, never answered by the CPU draw. The CPU generator draws other numbers than the
    GPU's, and a stage that fell back while the judge did not was graded against other weights: an honest line
    failed almost every element of a shape whose model was built while five gradings shared the card, and passed
    once the same shape's model was built again later (kernelbench.base.device_errors)."""
    from kernelbench.base.device_errors import depends_on_the_moment

    if device.type == "cuda":
        try:
            torch.manual_seed(seed)
            with torch.device(device):
                return cls(*args, **kwargs)
        except (RuntimeError, TypeError, ValueError, AssertionError) as exc:  # AssertionError: no CUDA build
            if depends_on_the_moment(torch, exc):
                raise
    torch.manual_seed(seed)
    return cls(*args, **kwargs)



def wait_for_inputs(path: Path, device, wait_s: float) -> list:
    """The inputs the judge published at `path` (and will check against); literal arguments come back as given."""
    from kernelbench.eval.tensorfile import load_inputs

    deadline = time.monotonic() + wait_s
    while not path.is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the judge never produced inputs {path.name}")
        time.sleep(POLL_S)
    return load_inputs(path, device)


def exact_tensors(torch, out: Any) -> tuple[list | None, bool, str]:
    """The output's tensors if every one is exactly torch.Tensor, else the reason (checked before anything
    touches the output: a lazy tensor would run its deferred work)."""
    single = type(out) is torch.Tensor
    items = [out] if single else list(out) if type(out) in (tuple, list) else None
    if items is None or any(type(t) is not torch.Tensor for t in items):
        bad = out if items is None else next(t for t in items if type(t) is not torch.Tensor)
        kind = type(bad)
        return None, single, (f"output is a {kind.__module__}.{kind.__qualname__}, not exactly torch.Tensor "
                              "(subclasses, wrappers and lazy tensors are refused)")
    return items, single, ""


def tensors_of(torch, out: Any) -> list:
    """An output as the list of its parts (a tensor alone, or the items of a tuple or list)."""
    return [out] if type(out) is torch.Tensor else list(out) if type(out) in (tuple, list) else []


@contextlib.contextmanager
def launch_recorder(device, enabled: bool, watch_files: list[Path] | None = None, kernels_only: bool = False):
    """Names (and device time) of the kernels a call launched, for the integrity launch audit; and the problem's
    own code, should it run inside a candidate's call."""
    if not enabled:
        yield {}
        return
    from kernelbench.eval.integrity.profiling import record_launches

    with record_launches(device.type, watch_files or [], kernels_only=kernels_only) as launches:
        yield launches
