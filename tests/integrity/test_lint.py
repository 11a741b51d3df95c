"""Unit tests of the static lint: forbidden ops through aliases, getattr, importlib and string building; the
tools of grader gaming; and no findings on honest code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench.eval.integrity.lint import lint_solution, lint_source

GEMM = SimpleNamespace(forbidden=["torch.mm", "torch.matmul"], forbidden_kernels=["cutlass"])
SOFTMAX = SimpleNamespace(forbidden=["torch.softmax", "torch.nn.functional.softmax"], forbidden_kernels=[])
TOPK = SimpleNamespace(forbidden=["torch.topk"], forbidden_kernels=[])
REPO = Path(__file__).resolve().parents[2]


def errors(source: str, spec=GEMM) -> list[tuple[int, str]]:
    return [(f.klass, f.message) for f in lint_source(source, spec) if f.severity == "error"]


def classes(source: str, spec=GEMM, severity: str = "error") -> set[int]:
    return {f.klass for f in lint_source(source, spec) if f.severity == severity}


def leads(source: str, spec=GEMM) -> set[int]:
    """Classes reported as leads: what the run decides (a library bypass, a precision downgrade, files and
    processes the sandbox confines) is shown with its line and judged by the run's own evidence."""
    return {f.klass for f in lint_source(source, spec) if f.severity == "warning" and f.message.startswith("lead: ")}


def flagged(source: str, spec=GEMM) -> set[int]:
    return classes(source, spec) | leads(source, spec)


@pytest.mark.parametrize("source", [
    "import torch\ny = torch.mm(a, b)",
    "from torch import mm as m\ny = m(a, b)",
    "import torch as t\nmm = t.mm\ny = mm(a, b)",
    "import torch\ndef f(a, b, op=torch.matmul):\n    return op(a, b)",
    "import torch\ny = getattr(torch, 'm' + 'm')(a, b)",
    "import torch\ny = getattr(torch, ''.join(['mat', 'mul']))(a, b)",
    "import torch\nname = 'mm'\ny = getattr(torch, name)(a, b)",
    "import torch\ny = getattr(torch, 'mm'[::-1][::-1])(a, b)",
    "import torch\ny = getattr(torch, f'{\"m\"}m')(a, b)",
    "import importlib\ny = importlib.import_module('torch').mm(a, b)",
    "y = __import__('torch').matmul(a, b)",
    "import sys\ny = sys.modules['torch'].mm(a, b)",
    "import torch\ny = vars(torch)['mm'](a, b)",
    "import torch\ny = torch.__dict__['mm'](a, b)",
    "y = a @ b",
    "y = a.matmul(b)",
    "import torch\ny = torch.einsum('ij,jk->ik', a, b)",
    "import torch.nn.functional as F\ny = F.linear(a, b)",
    "import torch\ny = torch.bmm(a[None], b[None])[0]",
    "import numpy as np\ny = np.matmul(a, b)",
    "import torch\ntry:\n    import triton\nexcept ImportError:\n    y = torch.mm(a, b)",
    "import torch\n(a, b), op = (a, b), torch.mm\ny = op(a, b)",
    "import torch\nif (op := torch.mm):\n    y = op(a, b)",
    "import torch\ny = torch.ops.aten.mm.default(a, b)",
    "import operator\ny = operator.matmul(a, b)",
    "from functools import reduce\nimport operator\ny = reduce(operator.matmul, [a, b])",
    "import cupy\ny = cupy.cublas.gemm('N', 'N', a, b)",
    "def matmul(a, b):\n    pass\ny = a.matmul(b)",
])
def test_forbidden_gemm_is_seen_through_tricks(source):
    assert 1 in leads(source) and 1 not in classes(source), lint_source(source, GEMM)


@pytest.mark.parametrize("source, klass", [
    ("import reference\nclass Model(reference.Model):\n    pass", 1),
    ("from reference import Model as Ref", 1),
    ("import importlib\nref = importlib.import_module('refer' + 'ence')", 1),
    ("import importlib\nm = importlib.import_module(name)", 1),
    ("eval('1')", 1),
    ("exec(code)", 1),
    ("import sys\nf = sys._getframe(1)", 8),
    ("import inspect\nst = inspect.stack()", 8),
    ("import gc\nobjs = gc.get_objects()", 8),
    ("import traceback\ns = traceback.extract_stack()", 8),
    ("import os\nif os.environ.get('KERNELBENCH_STAGE'): pass", 8),
    ("def f(fr):\n    return fr.f_back.f_locals", 8),
    ("import torch\ntorch.cuda.synchronize = lambda *a: None", 11),
    ("from torch.cuda import Event\nEvent.elapsed_time = lambda s, e: 1e-3", 11),
    ("import torch\nsetattr(torch.cuda, 'synchronize', lambda: None)", 11),
    ("import torch\ntorch.allclose = lambda *a, **k: True", 11),
    ("import torch\nlib = torch.library.Library('aten', 'IMPL')", 11),
    ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", 14),
    ("import torch\ntorch.set_float32_matmul_precision('high')", 14),
    ("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass", 14),
    ("import os\nos.environ['NVIDIA_TF32_OVERRIDE'] = '1'", 14),
    ("import os\nos.environ['TRITON_CACHE_DIR'] = '/tmp/x'", 11),
    ("import sys\nsys.exit(0)", 12),
    ("raise SystemExit(0)", 12),
    ("import os\nos._exit(0)", 12),
    ("open('check.py', 'w').write('print(1)')", 12),
    ("from pathlib import Path\nPath('problem.yaml').write_text('x')", 12),
    ("import os\nos.remove('benchmark.py')", 12),
    ("import shutil\nshutil.rmtree('..')", 12),
    ("import subprocess\nsubprocess.run(['sh', '-c', 'x'])", 12),
    ("import os\npid = os.fork()", 12),
    ("import threading\nthreading.Thread(target=f).start()", 9),
    ("import torch\nclass Lazy(torch.Tensor):\n    pass", 10),
    ("class W:\n    def __torch_function__(self, *a):\n        pass", 10),
    ("import torch\nx = torch.load('answers.pt')", 6),
    ("import torch\ns = torch.initial_seed()", 6),
    ("S = 'cudaStreamAttributeAccessPolicyWindow'", 13),
    ("import torch\ntorch.cuda.memory.change_current_allocator(a)", 2),
    ("import torch\nvars(torch.cuda).update(synchronize=lambda: None)", 11),
    ("import torch\ntorch.cuda.Event.__dict__", 0),
    ("import torch\nobject.__setattr__(torch.cuda, 'synchronize', f)", 11),
    ("import json\njson.__dict__.__setitem__('dumps', f)", 11),
    ("try:\n    raise KeyError\nexcept KeyError as e:\n    tb = e.__traceback__", 8),
    ("NAMES = 'tb_frame f_back f_locals'.split()\nf = getattr(tb, NAMES[0])", 8),
    ("f = getattr(tb, 'tb_' + 'frame')", 8),
    ("import io\nio.FileIO('/work/x.py', 'a').write(b'x')", 12),
    ("from multiprocessing.pool import ThreadPool\npool = ThreadPool(1)", 9),
    ("import torch.multiprocessing as mp\np = mp.Process(target=f)", 12),
    ("import os\nos.setpgid(0, 0)", 12),
    ("import statistics\ntype(statistics).__setattr__(statistics, 'median', min)", 11),
    ("import sys\nif 'kernelbench.eval.worker' in sys.modules: pass", 8),
    ("import sys\nw = sys.modules.get('_kb_reference_0')", 8),
    ("import sys\nrefs = [m for m in list(sys.modules.values()) if hasattr(m, 'get_inputs')]", 8),
    ("import sys\nfor name in sys.modules:\n    pass", 8),
])
def test_gaming_tools_are_errors(source, klass):
    if klass == 0:  # reading a namespace is not patching it
        assert 11 not in classes(source), lint_source(source, GEMM)
        return
    assert klass in flagged(source), lint_source(source, GEMM)
    if klass in (1, 14):  # the run decides: the launch audit, the error size, the pinned flags
        assert klass in leads(source) and klass not in classes(source)


def test_version_counter_reads_are_shown_not_judged():
    """Published solutions key their one-time weight preparation (padding, packing) on the weight's version counter,
    the right way to notice load_state_dict; output memoisation keyed on it is caught by the dynamic checks
    (the allocator hands new inputs the same pointer and version 0), so the read is a warning for the auditor."""
    source = "class M:\n    def prep(self):\n        if self.weight._version != self.v:\n            self.v = self.weight._version"
    assert 7 not in classes(source) and 7 in classes(source, severity="warning")


@pytest.mark.parametrize("source", [
    "def get_inputs():\n    from reference import get_inputs as build\n    return build()",
    "def get_init_inputs():\n    import reference\n    return reference.get_init_inputs()",
])
def test_helpers_that_delegate_to_the_reference_input_builders_are_shown_not_judged(source):
    """Solutions written for KernelBench-Hard carry get_inputs helpers that call the reference's: inputs, no output."""
    assert 1 not in classes(source) and 1 in classes(source, severity="warning")


def test_reading_the_shape_globals_a_layout_rebinds_is_shown_not_judged():
    """KernelBench-Hard references hold the current shape in module globals (BATCH, ...), rebound per shape."""
    spec = SimpleNamespace(forbidden=[], forbidden_kernels=[], shapes=[{"batch": 8, "seq_len": 1024}])
    source = "def get_inputs():\n    import reference\n    b = reference.BATCH\n    return reference.get_inputs()"
    assert 1 not in classes(source, spec) and 1 in classes(source, spec, severity="warning")
    assert 1 in leads("import reference\nreference.BATCH = 1", spec)       # rebinding it is not reading it
    assert 1 in leads("import reference\nx = reference.CACHE", spec)       # a global that is no shape key


@pytest.mark.parametrize("source", [
    "def f():\n    import reference\n    return reference.Model",
    "def get_inputs():\n    import reference\n    return reference.get_inputs()\ndef g():\n    import reference\n"
    "    return reference.Model()",
    "import reference\nm = reference",
    "from reference import get_inputs, Model",
    "from reference import get_inputs\nM = get_inputs.__globals__['Model']",
    "import reference as r\nbuild = r.get_inputs\nM = build.__globals__",
    "import reference\nreference.M = 4096",
])
def test_any_other_reach_into_the_reference_stays_a_lead_or_an_error(source):
    """The run decides whether the reference's code ran inside the forward (the launch audit names it)."""
    assert flagged(source) & {1, 8, 11}, lint_source(source, GEMM)


def test_inline_cuda_library_calls_and_l2_windows():
    source = '''
from torch.utils.cpp_extension import load_inline
CPP = """
#include <cublas_v2.h>
// cublasGemmEx in a comment is fine
torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::matmul(a, b); }
void g(cudaStream_t s) { cudaStreamAttrValue v; v.accessPolicyWindow.hitRatio = 1.0; }
"""
mod = load_inline("m", cpp_sources=CPP, extra_ldflags=["-lcublas"])
'''
    found = {(f.klass, f.check, f.severity) for f in lint_source(source, GEMM)}
    assert (1, "sidecar_lint", "warning") in found and (13, "sidecar_lint", "error") in found
    lines = {f.line for f in lint_source(source, GEMM) if f.check == "sidecar_lint" and f.klass == 1}
    assert 5 not in lines  # the comment line


def test_sidecar_files_and_local_helper_modules(tmp_path):
    (tmp_path / "solution.py").write_text("import helper\nclass Model:\n    pass\n")
    (tmp_path / "helper.py").write_text("import torch\ndef go(a, b):\n    return torch.mm(a, b)\n")
    (tmp_path / "kernel.cu").write_text("#include <cublasLt.h>\n")
    found = lint_solution(tmp_path / "solution.py", GEMM)
    assert {f.file for f in found if f.message.startswith("lead: ")} == {"helper.py", "kernel.cu"}


@pytest.mark.parametrize("source", [
    "import torch\ncfgs = [3, 1]\ncfgs.sort()",
    ("import torch\nclass M(torch.nn.Module):\n    def matmul(self, a, b):\n        return a\n"
     "    def forward(self, a, b):\n        return self.matmul(a, b)"),
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False",
    "import torch\ntorch.set_float32_matmul_precision('highest')",
    "import re\np = re.compile('x')",
    "import torch\nfn = torch.compile(f)",
    "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a'",
    "import triton.language as tl\ndef k(p):\n    x = tl.load(p, eviction_policy='evict_last')\n    return tl.dot(x, x)",
    "import torch\nlinear = torch.nn.Linear(4, 4)\nw = linear.weight",
    "import sys\nhave_triton = 'triton' in sys.modules",
    "class M:\n    def __init__(self):\n        self.__dict__.__setitem__('y', 2)\n"
    "        super().__setattr__('z', 3)",
    "d = {}\nd.__setitem__('x', 1)",
    ("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass C:\n    a: int\n"
     "    def __post_init__(self):\n        object.__setattr__(self, 'a', 2)"),
    "import torch\ny = torch.exp(x - x.amax(dim=-1, keepdim=True))\nz = y / y.sum(-1, keepdim=True)",
])
def test_honest_code_has_no_errors(source):
    assert not errors(source), lint_source(source, GEMM)


def test_topk_family_and_ambiguous_sort():
    assert 1 in leads("import torch\nv, i = x.sort(dim=-1, descending=True)", TOPK)
    assert 1 in leads("import torch\nv = torch.argsort(x)", TOPK)
    assert 1 not in flagged("items = [2, 1]\nitems.sort()", TOPK)


def test_softmax_family_method_and_functional():
    assert 1 in leads("y = x.softmax(-1)", SOFTMAX)
    assert 1 in leads("import torch\ny = torch.special.softmax(x, -1)", SOFTMAX)
    assert 1 in leads("from torch.nn import functional\ny = functional.log_softmax(x, -1)", SOFTMAX)


def test_findings_carry_file_line_and_class_name():
    [f] = [f for f in lint_source("import torch\n\ny = torch.mm(a, b)\n", GEMM) if f.klass == 1]
    assert (f.check, f.klass, f.class_name, f.line) == ("ast_lint", 1, "library bypass", 3)
    assert f.evidence == "solution.py:3: y = torch.mm(a, b)"


def test_deck_honest_solutions_are_clean():
    from kernelbench.problems.loader import load_problem_spec

    checked = 0
    for kind in ("eager", "triton"):
        for path in sorted((REPO / "solutions" / kind).glob("*.py")):
            problem = REPO / "problems" / path.stem
            if (problem / "problem.yaml").is_file():
                found = [f for f in lint_solution(path, load_problem_spec(problem)) if f.severity == "error"]
                assert not found, f"{path}: {found}"
                checked += 1
    if not checked:
        pytest.skip("no honest solutions in the deck yet")


def test_a_streaming_access_policy_window_is_a_lead_a_persisting_one_a_verdict():
    """Published solutions stream their weights with an evict-first window (hitProp = missProp = streaming): it
    keeps nothing resident through the flush. A window that persists lines, or names no property that shows
    otherwise, stays an error."""
    window = '''
from torch.utils.cpp_extension import load_inline
CPP = """
void w(cudaStream_t s, void* p) {
    cudaStreamAttrValue a = {};
    a.accessPolicyWindow.base_ptr = p;
    a.accessPolicyWindow.hitProp = cudaAccessProperty%s;
    a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &a);
}
"""
mod = load_inline("m", cpp_sources=CPP)
'''
    assert 13 not in classes(window % "Streaming") and 13 in classes(window % "Streaming", severity="warning")
    assert 13 in classes(window % "Persisting")


def test_assigning_build_configuration_is_a_lead_and_grader_modules_still_convict():
    patched = "import sysconfig\norig = sysconfig.get_path\nsysconfig.get_path = lambda n, *a: '/x' if n == 'include' else orig(n)"
    assert 11 not in classes(patched) and 11 in leads(patched)
    assert 11 in classes("import time\ntime.perf_counter = lambda: 0.0")
    assert 11 in classes("import torch\ntorch.allclose = lambda *a, **k: True")
