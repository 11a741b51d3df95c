"""Atomic writes and YAML/JSON loading that remembers where every value came from."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, TypeVar

import orjson
import yaml

from kernelbench.errors import Diagnostic, KernelBenchError

if TYPE_CHECKING:
    from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound="BaseModel")


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
    """Strict JSON: a NaN or an infinity in `payload` raises ValueError instead of writing a file that JSON
    parsers in other languages refuse."""
    text = json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


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


# Input files are untrusted: a document nested deeper than this, or whose aliases would expand to more nodes than
# this, is refused while it is composed, before anything is built from it ("billion laughs": 9 levels of 9
# aliases are 387 million strings from a file of 300 bytes).
MAX_DEPTH = 64
MAX_ALIAS_NODES = 10_000


class _BeyondLimits(yaml.composer.ComposerError):
    """A document refused for its depth or its aliases' expansion (not for its syntax)."""


class _LineLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0  # of the node being composed
        self._deepest = 0  # the deepest level reached under it, an alias reaching as deep as its anchor's node
        self._alias_nodes = 0  # nodes the aliases so far stand for
        self._anchored: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height) of its node
        self._nodes = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            nodes, height = self._anchored.get(event.anchor, (1, 1))
            self._alias_nodes += nodes
            self._nodes += nodes
            self._refuse_beyond(self._depth + height, event)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise _BeyondLimits(
                    None, None, f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes", event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        self._refuse_beyond(self._depth, event)
        outer, self._deepest = self._deepest, self._depth
        first = self._nodes
        self._nodes += 1
        node = super().compose_node(parent, index)
        if event.anchor is not None:
            self._anchored[event.anchor] = (self._nodes - first, self._deepest - self._depth + 1)
        self._deepest = max(outer, self._deepest)
        self._depth -= 1
        return node

    def _refuse_beyond(self, depth: int, event) -> None:
        self._deepest = max(self._deepest, depth)
        if depth > MAX_DEPTH:
            raise _BeyondLimits(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)


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


def _construct_text(loader: _LineLoader, node: yaml.ScalarNode) -> str:
    value = loader.construct_scalar(node)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        try:  # a JSON-style escaped pair ("\ud83d\ude00"), which PyYAML leaves as two halves: join them
            return value.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:  # a lone half: no UTF-8 file, page or JSON export can hold it
            raise yaml.constructor.ConstructorError(
                None, None, f"a lone surrogate ({value[exc.start]!r}) is not text", node.start_mark) from None
    return value


_LineLoader.add_constructor("tag:yaml.org,2002:str", _construct_text)
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
    except _BeyondLimits as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise KernelBenchError(f"refused YAML: {exc.problem or exc}", path=path, line=line,
                               hint="write the values out plainly: input files need no aliases or deep nesting"
                               ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = "; ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
        raise KernelBenchError(f"invalid YAML: {what}", path=path, line=line,
                               hint="fix the syntax at that line (indentation, a missing ':' or quote)") from None
    except RecursionError:
        raise KernelBenchError(f"refused YAML: nested too deeply to read (over {MAX_DEPTH} levels)", path=path,
                               hint="input files need no deep nesting") from None
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


FIELDS_DOC = "docs/data.md"  # says which model (and so which fields) each file of ours is
MAX_SCHEMA_ERRORS = 20  # reported per file (a file can hold a million bad values; each costs a scan for its line)


def validation_diagnostics(path: Path, data: Any, error: Any, source: str | None = None) -> list[Diagnostic]:
    """Turn a pydantic ValidationError into one Diagnostic per error, each with its file, line and a hint. Lines
    come from line-annotated YAML data, or from `source`, the JSON text `data` was parsed from."""
    diags = []
    errors = error.errors()
    for item in errors[:MAX_SCHEMA_ERRORS]:
        loc = [p for p in item.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-"))]
        where = ".".join(str(p) for p in loc) or "(top level)"
        message = item.get("msg", "invalid value").removeprefix("Value error, ")
        if item.get("type") == "extra_forbidden":
            message = f"unknown key '{loc[-1]}'" if loc else "unknown key"
            hint = f"remove it or check its spelling against the fields of the model {FIELDS_DOC} names"
        elif item.get("type") == "missing":
            hint = f"add '{loc[-1]}'" if loc else "add the missing field"
            message = f"missing required key '{where}'"
        else:
            hint = (f"correct '{where}'; the file is left out until it validates ({FIELDS_DOC} names the model "
                    "that lists every field)" if loc else f"see {FIELDS_DOC} for what this file holds")
            message = f"{where}: {message}"
        line = json_line_of(source, loc) if source is not None else line_of(data, loc)
        diags.append(Diagnostic(path=path, line=line, message=message, hint=hint))
    if len(errors) > MAX_SCHEMA_ERRORS:
        diags.append(Diagnostic(path=path, message=f"{len(errors) - MAX_SCHEMA_ERRORS:,} more schema errors",
                                hint="fix the ones above first: the rest are often of the same kind"))
    return diags


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')


def json_line_of(text: str, loc: Iterable[Any]) -> int | None:
    """The 1-based line, in JSON `text`, of the deepest part of `loc` (keys and list indices, as pydantic
    reports them) that the document holds: a member's key, a list item's first token. A scan of tokens without
    recursion, run only to report an error."""
    want = list(loc)
    found: int | None = 1 if text.strip() else None
    stack: list[list] = []  # per open container: [is an object, current key or index, a key comes next]
    line, scanned = 1, 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        line += text.count("\n", scanned, match.start())  # strings hold no raw line ends: tokens never do
        scanned = match.start()
        if token in "}]":
            if stack:
                stack.pop()
            continue
        if token == ",":
            if stack:
                top = stack[-1]
                top[2] = top[0]
                if not top[0]:
                    top[1] += 1
            continue
        if token == ":":
            continue
        is_key = bool(stack) and stack[-1][0] and stack[-1][2]
        if is_key:
            stack[-1][1], stack[-1][2] = _json_key(token), False
        if is_key or (stack and not stack[-1][0]):  # a member's key, or a list item starting
            path = [entry[1] for entry in stack]
            if path == want[:len(path)]:
                found = line
                if len(path) == len(want):
                    return found
        if token in "{[":
            stack.append([token == "{", None if token == "{" else 0, token == "{"])
    return found


def _json_key(token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return token


def load_json(path: Path, text: str | bytes | None = None) -> Any:
    """Parse strict JSON (from `text` when given, else the file): a syntax error, the non-JSON NaN/Infinity, a
    number too large for a double or nesting deeper than MAX_DEPTH becomes a `KernelBenchError` naming the file
    and line. Integers beyond 64 bits come back as floats (orjson's rule); the models then refuse them."""
    if text is None:
        text = read_text(path)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise KernelBenchError(f"invalid JSON: {_json_problem(exc)}", path=path, line=exc.lineno,
                               hint=_json_hint(exc)) from None
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise KernelBenchError(f"refused JSON: nested more than {MAX_DEPTH} levels deep", path=path,
                               hint="input files need no deep nesting: check how this file was written")
    return data


def _json_problem(exc: orjson.JSONDecodeError) -> str:
    rest = exc.doc[exc.pos:exc.pos + 9] if isinstance(exc.doc, str) else ""
    for literal in ("NaN", "Infinity", "-Infinity"):
        if rest.startswith(literal):
            return f"{literal} is not a JSON number"
    if "depth" in exc.msg:
        return f"nested more than {MAX_DEPTH} levels deep"
    return exc.msg


def _json_hint(exc: orjson.JSONDecodeError) -> str:
    if "not a JSON number" in _json_problem(exc) or "infinity" in exc.msg:
        return "write null for a value that was not measured (JSON has no NaN or Infinity)"
    if "depth" in exc.msg:
        return "input files need no deep nesting: check how this file was written"
    return "fix the JSON syntax at that line"


def nesting_depth(data: Any) -> int:
    """How deeply lists and dicts nest in `data` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:  # one level past the limit is enough to refuse
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


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


def parse_model(path: Path, model_cls: type[ModelT], data: Any, source: str | None = None, *,
                plain: bool = False) -> ModelT:
    """Validate already-parsed data against a pydantic model; errors carry file, line and hint (`source`: the
    JSON text `data` came from, for the lines of a JSON file). `plain`: `data` holds plain dicts and lists only
    (parsed JSON), with nothing to strip (`to_plain`, a copy of the whole document)."""
    from pydantic import ValidationError

    try:
        return model_cls.model_validate(data if plain else to_plain(data))
    except ValidationError as exc:
        raise ModelLoadError(validation_diagnostics(Path(path), data, exc, source)) from None


def load_json_model(path: Path, model_cls: type[ModelT], text: str | None = None) -> ModelT:
    """A JSON file (or its `text`) validated against a pydantic model; every error names file and line."""
    if text is None:
        text = read_text(path)
    return parse_model(path, model_cls, load_json(path, text), source=text, plain=True)


def load_yaml_model(path: Path, model_cls: type[ModelT]) -> ModelT:
    """Load a YAML file into a pydantic model, reporting every schema problem with its line."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise KernelBenchError("expected a mapping of keys to values at the top level", path=path, line=1,
                               hint=f"see {FIELDS_DOC} for what this file holds")
    return parse_model(path, model_cls, data)
