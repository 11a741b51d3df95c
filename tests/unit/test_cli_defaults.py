"""The command line's defaults: the device and shapes a machine gets by default, the one-line error where CUDA is
asked for and absent, and every default shown in --help."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kernelbench import hardware
from kernelbench.cli import all_parsers, build_parser, main
from kernelbench.eval.stages.correctness import reference_failed

TRACEBACK = """judge stage failed: AssertionError: Torch not compiled with CUDA enabled
  File "/x/kernelbench/eval/worker/judge.py", line 224, in run_judge
    device_info=device_info(ctx.torch, ctx.device))
AssertionError: Torch not compiled with CUDA enabled
"""


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(hardware, "cuda_available", lambda: False)


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(hardware, "cuda_available", lambda: True)


def test_auto_is_the_cpu_with_smoke_shapes_without_a_gpu(no_gpu):
    assert hardware.resolve_device("auto") == "cpu"
    assert hardware.resolve_shapes("auto", "cpu") == "smoke"
    assert hardware.resolve_shapes("full", "cpu") == "full"


def test_auto_is_cuda_with_full_shapes_on_a_gpu(gpu):
    assert hardware.resolve_device("auto") == "cuda"
    assert hardware.resolve_shapes("auto", "cuda") == "full"


def test_cuda_without_a_gpu_is_one_line_naming_the_fix(no_gpu, capsys, tmp_path):
    code = main(["grade", str(tmp_path / "solution.py"), "--problem", "problems/04_kahan_softmax",
                 "--device", "cuda"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--device cuda" in err and "--device cpu" in err
    assert "Traceback" not in err and "reference" not in err


def test_the_chosen_device_is_said_on_stderr(no_gpu, capsys):
    from kernelbench.eval.cli import resolve_device_options

    args = argparse.Namespace(device="auto", shapes="auto")
    resolve_device_options(args)
    assert (args.device, args.shapes) == ("cpu", "smoke")
    captured = capsys.readouterr()
    assert captured.out == "" and "device cpu" in captured.err and "smoke shapes" in captured.err


def test_a_reference_that_needs_cuda_is_a_one_line_error_not_a_broken_reference():
    message = str(reference_failed("problems/x", TRACEBACK))
    assert "\n" not in message and "needs a CUDA GPU" in message and "reference failed" not in message


def test_a_failing_reference_is_reported_by_its_first_line_only():
    error = reference_failed("problems/x", "judge stage failed: ValueError: bad shape\n  File \"r.py\", line 3\n")
    assert error.diagnostic.message == "the reference failed to run: judge stage failed: ValueError: bad shape"


def test_every_option_default_shows_in_help():
    missing = []
    for parser in all_parsers(build_parser()):
        text = parser.format_help()
        for action in parser._actions:
            if not action.option_strings or action.default in (None, False, argparse.SUPPRESS, [], ""):
                continue
            helped = parser.formatter_class(prog=parser.prog)._get_help_string(action) or ""
            if "default" not in helped or not action.help or action.help.split()[0] not in text:
                missing.append(f"{parser.prog} {action.option_strings[0]}")
    assert not missing, f"options whose default --help does not show: {missing}"


def test_a_cuda_sweep_without_a_gpu_is_refused_before_any_run(no_gpu, capsys, tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"name: gpu\nagents: [scripted:eager]\nproblems: [04_kahan_softmax]\n"
                     f"problems_dir: {Path('problems').resolve()}\nruns: runs\ndevice: cuda\n")
    code = main(["sweep", str(sweep)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no CUDA GPU" in err and "device: cpu" in err
    assert not (tmp_path / "runs").exists()
