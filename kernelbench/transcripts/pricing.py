"""Cost estimates from the dated price table (`prices.yaml`) for logs that do not record a cost."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import msgspec

from kernelbench.transcripts.model import Session, Usage

PRICES_FILE = Path(__file__).with_name("prices.yaml")


class Price(msgspec.Struct, kw_only=True):
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class PriceTable(msgspec.Struct, kw_only=True):
    as_of: str
    models: dict[str, Price]

    def find(self, model: str) -> tuple[str, Price] | None:
        name = model.split("/")[-1].lower()
        matches = [key for key in self.models
                   if name.startswith(key) and (len(name) == len(key) or name[len(key)] in "-_:@" or key.endswith("-2025"))]
        if not matches:
            return None
        key = max(matches, key=len)
        return key, self.models[key]


@lru_cache(maxsize=1)
def price_table(path: Path = PRICES_FILE) -> PriceTable:
    import yaml  # here: most logs record their cost, and a command that needs no estimate should not load yaml

    # libyaml's safe loader where PyYAML was built with it: the pure-Python one took 4 ms of a process's first load
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return msgspec.convert(yaml.load(path.read_text(encoding="utf-8"), Loader=loader), PriceTable)


def cost_of(usage: Usage, price: Price) -> float:
    return (usage.input * price.input + usage.output * price.output + usage.cache_read * price.cache_read
            + usage.cache_write * price.cache_write) / 1e6


def estimate_cost(session: Session, table: PriceTable | None = None) -> None:
    """Fill `cost_usd` (marked as an estimate) when the log gave none and every model has a price."""
    if session.cost_usd is not None or session.tokens.is_zero():
        return
    table = table or price_table()
    by_model = _usage_by_model(session)
    total, used = 0.0, []
    for model, usage in by_model.items():
        found = table.find(model) if model else None
        if found is None:
            session.cost_note = (f"no price for model {model!r} in prices.yaml ({table.as_of}): cost unknown"
                                 if model else "the log names no model: cost unknown")
            return
        total += cost_of(usage, found[1])
        used.append(found[0])
    session.cost_usd = round(total, 6)
    session.cost_is_estimate = True
    session.cost_note = f"estimated from list prices as of {table.as_of} ({', '.join(sorted(set(used)))})"


def _usage_by_model(session: Session) -> dict[str | None, Usage]:
    """Per model where events say which model spent what and add up to the total; else all on the main model."""
    primary = session.models[0] if session.models else None
    spent: dict[str | None, list[Usage]] = {}
    for event in session.walk():
        if event.usage is not None:
            model = event.model if event.model and not event.model.startswith("<") else primary
            usages = spent.get(model)
            if usages is None:                  # (setdefault would build a list for every event)
                usages = spent[model] = []
            usages.append(event.usage)
    # each model's usages summed in bulk (a call per usage was most of this walk's time)
    groups = {model: Usage.sum_of(usages) for model, usages in spent.items()}
    summed = Usage.sum_of(list(groups.values()))
    if summed == session.tokens and groups:          # the counts compared field by field
        return groups
    return {primary: session.tokens}
