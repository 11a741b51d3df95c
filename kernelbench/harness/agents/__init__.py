"""Agent adapters, one module each; a module defining `ADAPTER` registers that agent under its name.

Adding an agent = adding a module here with a subclass of `AgentAdapter` and `ADAPTER = MyAdapter()`.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agents.base import AgentAdapter, AgentContext, AgentReport


@lru_cache(maxsize=1)
def registry() -> dict[str, AgentAdapter]:
    adapters = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        adapter = getattr(module, "ADAPTER", None)
        if isinstance(adapter, AgentAdapter):
            adapters[adapter.name] = adapter
    return adapters


def get_adapter(name: str) -> AgentAdapter:
    adapters = registry()
    if name not in adapters:
        raise KernelBenchError(f"no agent adapter named '{name}'",
                               hint=f"known agents: {', '.join(sorted(adapters))}")
    return adapters[name]


__all__ = ["AgentAdapter", "AgentContext", "AgentReport", "get_adapter", "registry"]
