"""The problem's own code running inside a candidate's call is recorded and refused by the launch audit, however
the candidate reached it (here: through the class hierarchy, with no name of the module anywhere)."""

from __future__ import annotations

import importlib.util
import threading
from types import SimpleNamespace

import torch

from kernelbench.eval.integrity.launches import launch_audit
from kernelbench.eval.integrity.profiling import record_launches, watch_code

REFERENCE = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return _double(x)

def _double(x):
    return x * 2
'''


def _load(path):
    spec = importlib.util.spec_from_file_location("_kb_reference_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_code_reached_through_subclasses_is_recorded(tmp_path):
    path = tmp_path / "reference.py"
    path.write_text(REFERENCE)
    _load(path)
    found = next(k for k in torch.nn.Module.__subclasses__() if k.__module__ == "_kb_reference_test")
    with record_launches("cpu", [path]) as launches:
        found()(torch.ones(3))
    assert {"python::reference.py:Model.forward", "python::reference.py:_double"} <= set(launches)
    findings = launch_audit(launches, SimpleNamespace(forbidden=[], forbidden_kernels=[]))
    assert findings and all(f.klass == 1 for f in findings)
    assert "reference.py" in findings[0].message


def test_code_run_from_a_thread_started_inside_the_call_is_seen(tmp_path):
    path = tmp_path / "reference.py"
    path.write_text(REFERENCE)
    module = _load(path)
    with watch_code([path]) as ran:
        worker = threading.Thread(target=module._double, args=(torch.ones(2),))
        worker.start()
        worker.join()
    assert "python::reference.py:_double" in ran


def test_own_code_and_nothing_watched_record_nothing(tmp_path):
    path = tmp_path / "reference.py"
    path.write_text(REFERENCE)
    with watch_code([path]) as ran:
        torch.ones(3) * 2
    with watch_code([]) as nothing:
        _load(path).Model()(torch.ones(1))
    assert ran == set() and nothing == set()
