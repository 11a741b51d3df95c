"""Runtime watch over the code the grader runs inside a candidate's process (class 11, in-process tampering).

The check and bench stages run trusted code beside the candidate: the timing loop, the guards, the result's
encoder. The lint refuses the monkeypatching it can read (`json.dumps = f`, `setattr(torch.cuda, ...)`), but a
namespace can be changed in ways no static reading resolves: `vars(m).__setitem__`, `object.__setattr__`, a
function's `__code__` swapped in place so every early-bound reference runs the new body. So the worker takes a
snapshot of what the grader depends on just before the candidate is imported, and compares it after the
candidate's work, before the result is written:

- every `kernelbench.*` module's globals (functions, classes, constants) and its functions' code and defaults;
- the callables of the standard-library and torch modules the grader's in-process code calls (timers, CUDA events
  and synchronisation, the JSON encoder, HMAC, statistics, files), and the methods of the classes it uses;
- the code of every Python function among them, so an in-place `__code__` swap is seen.

A name bound to a different object, deleted, or a function whose code or defaults changed is reported. What
torch does to itself is not: `torch.compile` wraps `torch.manual_seed` in its own function whose `__wrapped__`
leads back to the original, and patches `torch.nn.Module`'s constructor (not watched). Names that appear after
the snapshot (lazily imported submodules) are not changes. What this cannot see: a candidate that edits the
watch itself or the snapshot it holds; the lint refuses the live-object walks (gc, frames) that would reach them.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WATCHED_MODULES = ("builtins", "json", "json.encoder", "hmac", "hashlib", "statistics", "math", "time", "os",
                   "os.path", "pathlib", "secrets", "random", "struct", "marshal", "torch", "torch.cuda",
                   "torch.cuda.graphs", "torch.testing", "torch.serialization")
OWN_PACKAGE = "kernelbench"
FUNCTION_STATE = ("__code__", "__defaults__", "__kwdefaults__")
IMMUTABLE = (int, float, complex, str, bytes, bool, tuple, frozenset)
CALLABLE_KINDS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.ModuleType,
                  staticmethod, classmethod, property)


def watched_classes() -> list[type]:
    import json
    import pathlib

    classes: list[type] = [json.JSONEncoder, pathlib.Path, pathlib.PurePath]
    torch = sys.modules.get("torch")
    if torch is not None:
        classes += [torch.Tensor, torch.cuda.Event, torch.cuda.Stream]
        graph = getattr(torch.cuda, "CUDAGraph", None)
        classes += [graph] if isinstance(graph, type) else []
    return classes


@dataclass
class NamespaceWatch:
    """What a set of namespaces held when the watch was taken: (owner label, namespace, name) -> object."""

    bound: dict[tuple[str, str], tuple[dict, Any]] = field(default_factory=dict)
    state: dict[tuple[str, str], tuple[Any, tuple]] = field(default_factory=dict)

    @classmethod
    def take(cls) -> NamespaceWatch:
        watch = cls()
        for name, module in sorted(list(sys.modules.items()), key=lambda item: item[0]):
            if name == OWN_PACKAGE or name.startswith(OWN_PACKAGE + "."):
                watch.add_namespace(name, vars(module), own=True)
            elif name in WATCHED_MODULES and module is not None:
                watch.add_namespace(name, vars(module), own=False)
        for klass in watched_classes():
            watch.add_namespace(f"{klass.__module__}.{klass.__qualname__}", klass.__dict__, own=True)
        return watch

    def add_namespace(self, label: str, namespace, own: bool) -> None:
        """Own namespaces (the grader's modules and the classes it calls) are watched whole; the others for their
        callables only, since libraries keep state in module globals (torch.cuda._initialized)."""
        for name, value in list(namespace.items()):
            if value is None or not (isinstance(value, CALLABLE_KINDS) or (own and _watchable_value(value))):
                continue
            self.bound[(label, name)] = (namespace, value)
            function = _function_of(value)
            if function is not None:
                self.state[(label, name)] = (function, _function_state(function))
            if own and _own_plain_class(value) and f"{value.__module__}.{value.__qualname__}" != label:
                self.add_namespace(f"{value.__module__}.{value.__qualname__}", value.__dict__, own=True)

    def changes(self) -> list[str]:
        """One line per name that now holds something else, is gone, or whose function changed in place."""
        found = []
        for (label, name), (namespace, value) in self.bound.items():
            now = namespace.get(name, _MISSING)
            if now is _MISSING:
                found.append(f"{label}.{name} was deleted")
            elif now is not value and not _torch_own_wrapper(now, value):
                found.append(f"{label}.{name} was replaced (now {_describe(now)})")
        for (label, name), (function, before) in self.state.items():
            after = _function_state(function)
            changed = [attr for attr, old, new in zip(FUNCTION_STATE, before, after, strict=True) if old is not new]
            if changed:
                found.append(f"{label}.{name}: its {', '.join(changed)} changed in place")
        return found


_MISSING = object()


def _watchable_value(value: Any) -> bool:
    """Constants and callables of the grader's own modules; not its mutable caches, which it rebinds itself."""
    return isinstance(value, IMMUTABLE) or callable(value)


def _own_plain_class(value: Any) -> bool:
    """The grader's own classes, watched method by method; not pydantic models, which rebuild their validators
    lazily on first use."""
    return isinstance(value, type) and value.__module__.startswith(OWN_PACKAGE) and \
        "__pydantic_fields__" not in value.__dict__ and "model_fields" not in value.__dict__


def _function_of(value: Any) -> types.FunctionType | None:
    inner = value.__func__ if isinstance(value, (staticmethod, classmethod, types.MethodType)) else value
    return inner if isinstance(inner, types.FunctionType) else None


def _function_state(function: types.FunctionType) -> tuple:
    return tuple(getattr(function, attr) for attr in FUNCTION_STATE)


def _torch_own_wrapper(now: Any, original: Any) -> bool:
    """torch's own decorators (torch.compile's `disable` around manual_seed): defined in torch's own files, and
    unwrapping them leads back to the original object."""
    function, torch = _function_of(now), sys.modules.get("torch")
    if function is None or torch is None or not str(getattr(now, "__module__", "") or "").startswith("torch"):
        return False
    if torch.__file__ is None or \
            not function.__code__.co_filename.startswith(str(Path(torch.__file__).parent)):
        return False
    seen, inner = 0, now
    while seen < 8 and hasattr(inner, "__wrapped__"):
        inner, seen = inner.__wrapped__, seen + 1
        if inner is original:
            return True
    return False


def _describe(value: Any) -> str:
    function = _function_of(value)
    if function is not None:
        code = function.__code__
        return f"{function.__qualname__} from {code.co_filename}:{code.co_firstlineno}"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
