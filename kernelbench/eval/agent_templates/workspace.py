"""What check.py and benchmark.py share: the workspace's own modules and problem.json, the command line, and the
models built as the grader builds them (same seed, the reference's weights loaded strictly into the solution).

It is copied into the workspace as kb_eval/workspace.py, so the workspace is the folder above this file.
"""

import argparse
import importlib.util
import json
from pathlib import Path

import torch

WORKSPACE = Path(__file__).resolve().parent.parent


def load(name):
    """The workspace's `<name>.py` (reference or solution) as a fresh module."""
    spec = importlib.util.spec_from_file_location(name, WORKSPACE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_config():
    return json.loads((WORKSPACE / "problem.json").read_text())


def load_reference(config):
    """reference.py with the interface the scripts call: as it is where it is written our way, else (problem.json's
    `reference` is "seeded-module") its own functions behind that interface."""
    module = load("reference")
    return module if config.get("reference", "ours") == "ours" else SeededModule(module)


class SeededModule:
    """A reference written as Stanford KernelBench writes one (Model(*get_init_inputs()), get_inputs() drawn right
    after a seed is set, one shape in the module's constants) behind our interface, drawing as the grader draws:
    on the device where the module's factories can run there."""

    def __init__(self, module):
        self.module = module
        self.Model = module.Model

    def get_init_args(self, shape):
        return list(self.module.get_init_inputs())

    def get_inputs(self, shape, seed, device, case="base", scale=1.0):
        try:
            with torch.device(device):
                torch.manual_seed(seed)
                drawn = list(self.module.get_inputs())
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            torch.manual_seed(seed)
            drawn = list(self.module.get_inputs())
        return [_scaled(x, scale).to(device) if isinstance(x, torch.Tensor) else x for x in drawn]


def _scaled(value, scale):
    if scale == 1.0 or not value.is_floating_point():
        return value
    return (value.float() * scale).to(value.dtype)


def parse_args(doc):
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return parser.parse_args()


def solution_class(module, config):
    """The solution's model class: the first of the layout's class names (ModelNew, then Model) it defines."""
    for name in config.get("solution_classes", ["Model"]):
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            return cls
    raise SystemExit(f"solution.py defines none of the classes {', '.join(config.get('solution_classes', ['Model']))}")


def build_models(reference, module, shape, index, device, config):
    """The reference model and the solution's model for one shape, on `device` in eval mode, with the same weights:
    the reference's loaded strictly, or (a layout that builds both under one seed) the solution's own where its
    parameter names differ, drawn right after the same seed."""
    init_args = getattr(reference, "get_init_args", None)
    args, kwargs = (init_args(shape), {}) if init_args else ([], reference.get_init_kwargs(shape))
    torch.manual_seed(index)
    ref_model = reference.Model(*args, **kwargs).to(device).eval()
    cls = solution_class(module, config)
    by_seed = config.get("weights_by_seed", False)
    if by_seed:
        torch.manual_seed(index)
    model = cls(*args, **kwargs).to(device).eval()
    try:
        model.load_state_dict(ref_model.state_dict(), strict=True)
    except RuntimeError:
        if not by_seed:
            raise
    return ref_model, model
