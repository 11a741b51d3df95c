"""Name resolution for the lint: what a local name, attribute chain or computed lookup really refers to.

Flow-insensitive on purpose: a name bound anywhere in the file to `torch.mm` is treated as `torch.mm`
everywhere, so rebinding tricks (`mm = torch.mm`, `from torch import mm as m`, default arguments, tuple
unpacking, `getattr(torch, "m" + "m")`) all resolve to the same dotted name.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

BUILTIN_NAMES = set(dir(builtins))


@dataclass
class Symbols:
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted name
    strings: dict[str, str] = field(default_factory=dict)  # local name -> constant string
    assigned: set[str] = field(default_factory=set)        # every name the file binds


def collect_symbols(tree: ast.AST) -> Symbols:
    """Imports, aliases and constant strings bound anywhere in the module (iterated to a fixed point)."""
    symbols = Symbols()
    for node in ast.walk(tree):
        _collect_imports(node, symbols)
        for target in _bound_names(node):
            symbols.assigned.add(target)
    for _ in range(6):
        before = (dict(symbols.aliases), dict(symbols.strings))
        for node in ast.walk(tree):
            for name, value in _bindings(node):
                _bind(name, value, symbols)
        if before == (symbols.aliases, symbols.strings):
            break
    return symbols


def _collect_imports(node: ast.AST, symbols: Symbols) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                symbols.aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                symbols.aliases[root] = root
    elif isinstance(node, ast.ImportFrom):
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                continue
            dotted = f"{module}.{alias.name}" if module else alias.name
            symbols.aliases[alias.asname or alias.name] = dotted


def _bound_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []


def _bindings(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(name, value expression) pairs for assignments, walrus, defaults and unpacking."""
    pairs: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Assign):
        for target in node.targets:
            pairs.extend(_unpack(target, node.value))
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        pairs.extend(_unpack(node.target, node.value))
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            pairs.append((arg.arg, default))
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
            if kw_default is not None:
                pairs.append((arg.arg, kw_default))
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                pairs.extend(_unpack(item.optional_vars, item.context_expr))
    return pairs


def _unpack(target: ast.AST, value: ast.AST) -> list[tuple[str, ast.AST]]:
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        pairs = []
        for t, v in zip(target.elts, value.elts):
            pairs.extend(_unpack(t, v))
        return pairs
    return []


def _bind(name: str, value: ast.AST, symbols: Symbols) -> None:
    text = fold_string(value, symbols)
    if text is not None:
        symbols.strings.setdefault(name, text)
        return
    dotted = qualname(value, symbols)
    if dotted and name not in symbols.aliases:
        symbols.aliases[name] = dotted


# --------------------------------------------------------------------------------------------- strings

def fold_string(node: ast.AST | None, symbols: Symbols) -> str | None:
    """The constant string an expression builds, if it can be known without running it."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return symbols.strings.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold_string(node.left, symbols), fold_string(node.right, symbols)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text = fold_string(node.left, symbols)
        if text is not None and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int):
            return text * min(node.right.value, 64)
        return None
    if isinstance(node, ast.JoinedStr):
        parts = [fold_string(v.value if isinstance(v, ast.FormattedValue) else v, symbols) for v in node.values]
        known = [p for p in parts if p is not None]
        return "".join(known) if len(known) == len(parts) else None
    if isinstance(node, ast.Subscript):
        return _fold_slice(node, symbols)
    if isinstance(node, ast.Call):
        return _fold_call(node, symbols)
    return None


def _fold_slice(node: ast.Subscript, symbols: Symbols) -> str | None:
    text = fold_string(node.value, symbols)
    if text is None:
        return None
    try:
        if isinstance(node.slice, ast.Slice):
            bounds = [ast.literal_eval(ast.unparse(b)) if b is not None else None
                      for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            return text[slice(*bounds)]
        index = ast.literal_eval(ast.unparse(node.slice))
        return text[index]
    except (ValueError, TypeError, IndexError, SyntaxError):
        return None


def _fold_call(node: ast.Call, symbols: Symbols) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and 0 <= arg.value < 0x110000:
            return chr(arg.value)
        return None
    if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
        return fold_string(node.args[0], symbols)
    if not isinstance(func, ast.Attribute):
        return None
    base = fold_string(func.value, symbols)
    args = [fold_string(a, symbols) for a in node.args]
    if func.attr == "join" and base is not None and len(node.args) == 1:
        seq = node.args[0]
        if isinstance(seq, (ast.List, ast.Tuple)):
            items = [fold_string(e, symbols) for e in seq.elts]
            known = [i for i in items if i is not None]
            return base.join(known) if len(known) == len(items) else None
        text = fold_string(seq, symbols)
        return base.join(text) if text is not None else None
    if base is None or any(a is None for a in args):
        return None
    if func.attr in ("lower", "upper", "strip", "lstrip", "rstrip", "replace", "format", "title", "casefold",
                     "removeprefix", "removesuffix"):
        try:
            return getattr(base, func.attr)(*args)
        except (TypeError, ValueError, IndexError, KeyError):
            return None
    if func.attr == "decode":
        return base
    return None


def is_string_built(node: ast.AST) -> bool:
    """True when an expression builds a string at run time (concatenation, join, f-string, chr, decode...)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.JoinedStr, ast.BinOp)):
            return True
        if isinstance(sub, ast.Call):
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("join", "chr", "decode", "format", "replace", "b64decode", "fromhex", "reversed",
                        "lower", "upper", "translate"):
                return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Slice):
            return True
    return False


# --------------------------------------------------------------------------------------------- names

def qualname(node: ast.AST | None, symbols: Symbols) -> str | None:
    """The dotted name an expression refers to (`F.softmax` -> `torch.nn.functional.softmax`), or None."""
    if node is None:
        return None
    if isinstance(node, ast.Name):
        if node.id in symbols.aliases:
            return symbols.aliases[node.id]
        if node.id in BUILTIN_NAMES and node.id not in symbols.assigned:
            return f"builtins.{node.id}"
        if node.id in ("__builtins__",):
            return "builtins"
        return None
    if isinstance(node, ast.Attribute):
        base = qualname(node.value, symbols)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Call):
        return _qualname_of_call(node, symbols)
    if isinstance(node, ast.Subscript):
        return _qualname_of_subscript(node, symbols)
    return None


def _qualname_of_call(node: ast.Call, symbols: Symbols) -> str | None:
    func = qualname(node.func, symbols)
    if func == "builtins.getattr" and len(node.args) >= 2:
        base, attr = qualname(node.args[0], symbols), fold_string(node.args[1], symbols)
        return f"{base}.{attr}" if base and attr else None
    if func in ("importlib.import_module", "builtins.__import__") and node.args:
        module = fold_string(node.args[0], symbols)
        if module and func == "builtins.__import__" and not _has_fromlist(node):
            return module.split(".")[0]
        return module
    return None


def _has_fromlist(node: ast.Call) -> bool:
    if len(node.args) >= 4:
        return True
    return any(k.arg == "fromlist" for k in node.keywords)


def _qualname_of_subscript(node: ast.Subscript, symbols: Symbols) -> str | None:
    key = fold_string(node.slice, symbols)
    if key is None:
        return None
    container = node.value
    if qualname(container, symbols) == "sys.modules":
        return key
    if isinstance(container, ast.Attribute) and container.attr == "__dict__":
        base = qualname(container.value, symbols)
        return f"{base}.{key}" if base else None
    if isinstance(container, ast.Call) and qualname(container.func, symbols) == "builtins.vars" and container.args:
        base = qualname(container.args[0], symbols)
        return f"{base}.{key}" if base else None
    return None
