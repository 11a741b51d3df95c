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


def parse_args(doc):
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return parser.parse_args()


def build_models(reference, module, shape, index, device):
    """The reference model and `module`'s Model for one shape, on `device` in eval mode, with the same weights."""
    kwargs = reference.get_init_kwargs(shape)
    torch.manual_seed(index)
    ref_model = reference.Model(**kwargs).to(device).eval()
    model = module.Model(**kwargs).to(device).eval()
    model.load_state_dict(ref_model.state_dict(), strict=True)
    return ref_model, model
