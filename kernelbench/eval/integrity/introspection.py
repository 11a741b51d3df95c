"""Run-time refusal of the solution's reach into the interpreter (class 8, environment sniffing; class 11).

The grader's state in a candidate's process (the timing loop's samples, the audit's open windows, the fresh
inputs' seeds, the kept outputs) is found by walking the stack or the garbage collector's objects. The lint refuses
those names when it can read them, but a frame can be reached with names it cannot read (`dir(frame)` filtered by
suffix, a traceback's frame). Every such route passes through an operation that raises a CPython audit event:
`sys._getframe`, `sys._current_frames`, a traceback's, generator's or coroutine's frame attribute, `gc.get_objects`
and its siblings, `sys.settrace` / `sys.setprofile`, a function's `__code__` replaced, ctypes looking up the
interpreter's frame and thread-state functions. An audit hook cannot be removed once added. The worker adds one
before the solution is imported; when the code asking is the solution's own (its file, or a frame helper such as
`inspect.currentframe` called by it), the operation raises instead of returning, and the attempt is kept for the
report. torch, triton and the standard library asking for frames on their own behalf (warnings, logging, dynamo)
are untouched, and so is a solution's ordinary use of ctypes.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

EVENTS = {"sys._getframe": "takes a stack frame", "sys._current_frames": "takes every thread's stack frame",
          "sys.settrace": "sets a trace function (it receives every frame)",
          "sys.setprofile": "sets a profile function (it receives every frame)",
          "gc.get_objects": "walks the interpreter's live objects", "gc.get_referrers": "walks live objects",
          "gc.get_referents": "walks live objects", "sys.monitoring.register_callback": "registers a monitoring "
          "callback (it receives every code object)"}
FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "f_globals", "f_locals"}
REWRITE_ATTRIBUTES = {"__code__", "__globals__", "__closure__"}
CTYPES_SYMBOL_PREFIXES = ("PyFrame", "PyEval_GetFrame", "PyEval_SetTrace", "PyEval_SetProfile", "PyThreadState",
                          "_PyThreadState", "PyGen_", "_PyFrame", "_PyEval", "PyEval_GetLocals", "PyEval_GetGlobals",
                          "PySys_AddAuditHook", "PyGC_", "_PyGC")
# functions that hand a frame to their caller: the caller is the one asking
FRAME_HELPERS = {"inspect.py": {"currentframe", "stack", "trace", "getouterframes", "getinnerframes"},
                 "traceback.py": {"walk_stack", "walk_tb"},
                 "__init__.py": {"currentframe", "<lambda>", "__getattr__", "__getitem__"}}  # logging, ctypes


class IntrospectionRefused(PermissionError):
    pass


@dataclass
class IntrospectionGuard:
    """Refuses the operations above when the solution's own code asks; `refused` keeps what was asked, where."""

    roots: tuple[str, ...]
    refused: list[str] = field(default_factory=list)
    _busy: threading.local = field(default_factory=threading.local)

    def install(self) -> None:
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        what = self._what(event, args)
        if what is None or getattr(self._busy, "on", False):
            return
        self._busy.on = True
        try:
            where = self._asking_solution_frame()
        finally:
            self._busy.on = False
        if where is not None:
            attempt = f"{what} at {where}"
            if len(self.refused) < 50 and attempt not in self.refused:
                self.refused.append(attempt)
            raise IntrospectionRefused(f"refused by the grader: solution code {what} ({where})")

    @staticmethod
    def _what(event: str, args: tuple) -> str | None:
        if event in EVENTS:
            return EVENTS[event]
        if event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRIBUTES:
            return f"reads .{args[1]} (a stack frame)"
        if event == "object.__setattr__" and len(args) > 1 and args[1] in REWRITE_ATTRIBUTES:
            return f"replaces a function's .{args[1]}"
        if event == "ctypes.dlsym" and len(args) > 1 and isinstance(args[1], str) and \
                args[1].startswith(CTYPES_SYMBOL_PREFIXES):
            return f"looks up the interpreter's {args[1]} through ctypes"
        return None

    def _asking_solution_frame(self) -> str | None:
        """file:line of the solution's code that asked, if it was the solution's (directly or through a helper)."""
        # past this method and the hook: the code whose operation raised the event
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and self._is_helper(frame):
            frame = frame.f_back
        if frame is None:
            return None
        filename = frame.f_code.co_filename
        module_file = str(frame.f_globals.get("__file__") or "")
        if any(filename.startswith(r) or module_file.startswith(r) for r in self.roots):
            return f"{Path(filename).name}:{frame.f_lineno}"
        return None

    @staticmethod
    def _is_helper(frame) -> bool:
        code = frame.f_code
        names = FRAME_HELPERS.get(Path(code.co_filename).name)
        if names is None or code.co_name not in names:
            return False
        parts = Path(code.co_filename).parts
        return parts[-1] != "__init__.py" or (len(parts) > 1 and parts[-2] in ("logging", "ctypes"))
