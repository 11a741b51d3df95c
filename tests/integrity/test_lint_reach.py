"""Lint: reaching the grader's objects without naming them (class hierarchy, another module's globals) and
naming the grading run's files (stored inputs and outputs, stage markers)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernelbench.eval.integrity.lint import lint_source

SOFTMAX = SimpleNamespace(forbidden=["torch.softmax"], forbidden_kernels=[])


def error_classes(source: str) -> set[int]:
    return {f.klass for f in lint_source(source, SOFTMAX) if f.severity == "error"}


@pytest.mark.parametrize("source", [
    "import torch\nfound = torch.nn.Module.__subclasses__()\n",
    "import torch\nfound = type.__subclasses__(torch.nn.Module)\n",
    "import torch\nfound = getattr(torch.nn.Module, '__sub' + 'classes__')()\n",
    "def f(model):\n    return type(model).forward.__globals__['_helper']\n",
    "def f(fn):\n    return getattr(fn, '__glo' + 'bals__')\n",
])
def test_reaching_unnamed_objects_is_sniffing(source):
    assert 8 in error_classes(source)


@pytest.mark.parametrize("text", [".kbt", "out_s0_base_1", "check.done", ".done", "worker_result.json",
                                  "inputs/in_s1_absorb_3.kbt"])
def test_naming_grading_files_is_sniffing(text):
    assert 8 in error_classes(f"import os\nnames = [n for n in os.listdir('.') if n.endswith({text!r})]\n")


@pytest.mark.parametrize("source", [
    "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return super().forward(x)\n",
    "out = 'output.bin'\nname = 'in_features'\nkind = 'done'\n",
    "import os\nhere = os.path.dirname(__file__)\nsrc = open(os.path.join(here, 'kernel.cu')).read()\n",
])
def test_honest_spellings_stay_clean(source):
    assert error_classes(source) == set()


@pytest.mark.parametrize("source", [
    "import torch\non = torch.autograd._profiler_enabled()\n",
    "import torch\non = torch._C._autograd._profiler_type()\n",
    "from torch.autograd import profiler\non = profiler._is_profiler_enabled\n",
    "import torch\nfns = [v for k, v in vars(torch.autograd).items() if k.endswith('iler_enabled')]\n",
    "import torch\nstate = torch.profiler.profile\n",
])
def test_asking_whether_the_profiler_records_is_sniffing(source):
    assert 8 in error_classes(source)


def test_annotating_a_range_for_the_profiler_stays_clean():
    source = ("import torch\ndef f(x):\n    with torch.profiler.record_function('tile'):\n        return x + 1\n"
              "def g(x):\n    with torch.autograd.profiler.record_function('tile'):\n        return x + 1\n")
    assert error_classes(source) == set()
