"""Agent transcripts: one parser per CLI log format → one normalized event model (`Session`, `Event`).

The names below load on first use, so that importing a submodule (the command line's `transcripts.cli`) does not
load every parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {"load": "loader", "Event": "model", "Kind": "model", "Session": "model", "Usage": "model",
            "NormalizedWriter": "normalized", "write_session": "normalized"}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from kernelbench.transcripts.loader import load
    from kernelbench.transcripts.model import Event, Kind, Session, Usage
    from kernelbench.transcripts.normalized import NormalizedWriter, write_session


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
