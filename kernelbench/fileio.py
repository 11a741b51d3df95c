"""Atomic writes and YAML/JSON loading that remembers where every value came from."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable

import yaml

from kernelbench.errors import Diagnostic, KernelBenchError


# --------------------------------------------------------------------------------------------- atomic writes

def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and `os.replace`, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes 0600 files; keep the mode the file had, or the usual 0644 for a new one
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, payload: Any) -> None:
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------- YAML with lines

# YAML 1.1 (PyYAML's default) reads `5e-2` as a string because it wants a dot in the mantissa. Problem files
# are full of tolerances written that way, so floats follow YAML 1.2's rule instead.
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class LineMap(dict):
    """A mapping that also knows the 1-based line of each key (`key_lines`) and of itself (`start_line`)."""

    key_lines: dict[Any, int]
    start_line: int


class LineList(list):
    item_lines: list[int]
    start_line: int


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineMap:
    loader.flatten_mapping(node)
    result = LineMap()
    result.key_lines = {}
    result.start_line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    result = LineList(loader.construct_object(child, deep=True) for child in node.value)
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    result.start_line = node.start_mark.line + 1
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
_LineLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))


def load_yaml(path: Path, text: str | None = None) -> Any:
    """Parse YAML, keeping line numbers; a syntax error becomes a `KernelBenchError` naming file and line."""
    path = Path(path)
    if text is None:
        text = read_text(path)
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise KernelBenchError(f"invalid YAML: {exc.problem or exc}", path=path, line=line,
                               hint="fix the syntax at that line (indentation, a missing ':' or quote)") from None
    except yaml.YAMLError as exc:
        raise KernelBenchError(f"invalid YAML: {exc}", path=path, hint="fix the file's syntax") from None


def read_text(path: Path) -> str:
    """Read UTF-8 text; invalid bytes are an error naming the byte offset."""
    return decode_text(path, Path(path).read_bytes())


def decode_text(path: Path, data: bytes) -> str:
    """`read_text` for bytes already read (so a caller can hash exactly the bytes it parses)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KernelBenchError(f"not valid UTF-8 (byte {exc.start})", path=path, line=line,
                               hint="re-save the file as UTF-8") from None


def line_of(data: Any, loc: Iterable[Any]) -> int | None:
    """The line of the deepest element of `loc` (a pydantic error location) found in line-annotated YAML data."""
    line = getattr(data, "start_line", None)
    node = data
    for part in loc:
        if isinstance(node, LineMap) and part in node:
            line = node.key_lines.get(part, line)
            node = node[part]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


def validation_diagnostics(path: Path, data: Any, error: Any) -> list[Diagnostic]:
    """Turn a pydantic ValidationError into one Diagnostic per error, each with its file and line."""
    diags = []
    for item in error.errors():
        loc = [p for p in item.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-"))]
        where = ".".join(str(p) for p in loc) or "(top level)"
        message = item.get("msg", "invalid value")
        if item.get("type") == "extra_forbidden":
            message = f"unknown key '{loc[-1]}'" if loc else "unknown key"
            hint = "remove it or check its spelling against the documented fields"
        elif item.get("type") == "missing":
            hint = f"add '{loc[-1]}'" if loc else "add the missing field"
            message = f"missing required key '{where}'"
        else:
            hint = None
            message = f"{where}: {message}"
        diags.append(Diagnostic(path=path, line=line_of(data, loc), message=message, hint=hint))
    return diags


def load_json(path: Path, text: str | None = None) -> Any:
    """Parse JSON (from `text` when given, else the file); a syntax error names the file and line."""
    if text is None:
        text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise KernelBenchError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno,
                               hint="fix the JSON syntax at that line") from None


def to_plain(data: Any) -> Any:
    """Strip the line-annotated container types back to plain dicts and lists."""
    if isinstance(data, dict):
        return {k: to_plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [to_plain(v) for v in data]
    return data


class ModelLoadError(KernelBenchError):
    """A file failed its schema: carries one Diagnostic per problem found."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        first = diagnostics[0]
        super().__init__(first.message, path=first.path, line=first.line, hint=first.hint)
        self.args = ("\n".join(str(d) for d in diagnostics),)

    def __str__(self) -> str:
        return self.args[0]


def parse_model(path: Path, model_cls: type, data: Any):
    """Validate already-parsed data against a pydantic model; errors carry file and line."""
    from pydantic import ValidationError

    try:
        return model_cls.model_validate(to_plain(data))
    except ValidationError as exc:
        raise ModelLoadError(validation_diagnostics(Path(path), data, exc)) from None


def load_yaml_model(path: Path, model_cls: type):
    """Load a YAML file into a pydantic model, reporting every schema problem with its line."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise KernelBenchError("expected a mapping of keys to values at the top level", path=path, line=1,
                               hint="see the documented fields for this file")
    return parse_model(path, model_cls, data)
