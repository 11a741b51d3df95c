"""Static lint of a solution: forbidden ops however they are spelled, and the tools of grader gaming.

`lint_solution(solution_path, spec)` parses `solution.py` (and the local Python modules it imports, and its
C++/CUDA sources, inline or beside it) and returns one Finding per distinct problem, with file:line evidence.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelbench.base.catalogue import finding
from kernelbench.base.models import Finding
from kernelbench.eval.integrity import tables
from kernelbench.eval.integrity.names import Symbols, collect_symbols, fold_string, is_string_built, qualname
from kernelbench.eval.integrity.rules import AMBIGUOUS_METHODS, LIBRARY_ROOTS, Rules, rules_for_spec
from kernelbench.eval.integrity.sidecar import inline_sources, lint_cpp, lint_link_flags, sidecar_files

CHECK = "ast_lint"
# classes whose effect the run itself shows (docs/integrity.md, "Leads and verdicts"): a library bypass in the
# launch audit (the kernels and ops that ran, the problem's own code among them), a precision downgrade in the
# error against an fp64 oracle, the pinned backend flags and the machine code of the kernels that ran
RUN_DECIDES = {1, 14}
REFERENCE_MODULES = {"reference", "sota"}
# the reference's input builders: they make the problem's inputs and compute none of its outputs, and solutions in
# other benchmarks' layouts carry helpers that delegate to them
INPUT_BUILDERS = {"get_inputs", "get_init_inputs"}
TENSOR_KEYWORDS = {"dim", "descending", "stable", "largest", "sorted", "k", "out"}
MAX_LOCAL_MODULES = 20


@dataclass
class Linter:
    path: Path
    source: str
    tree: ast.Module
    rules: Rules
    symbols: Symbols
    parents: dict[ast.AST, ast.AST]
    findings: list[Finding] = field(default_factory=list)
    seen: set[tuple[int, str]] = field(default_factory=set)

    @property
    def l2_streaming(self) -> bool:
        """Its access-policy windows are streaming or normal only (tables.l2_window_is_streaming)."""
        return tables.l2_window_is_streaming(self.source)

    def report(self, node: ast.AST, klass: int, severity: str, message: str, key: str = "",
               lead: bool = False) -> None:
        """One finding at `node`'s line. `lead`: a pattern whose effect the grading observes where it happens
        (the files and processes the sandbox confines) is a lead, a warning with its line, never a verdict."""
        line = getattr(node, "lineno", 0)
        if (line, key or message) in self.seen:
            return
        self.seen.add((line, key or message))
        if lead and severity == "error":
            severity, message = "warning", f"lead: {message}"
        text = self.source.splitlines()[line - 1].strip() if 0 < line <= len(self.source.splitlines()) else ""
        self.findings.append(finding(CHECK, klass, message, severity=severity,  # type: ignore[arg-type]
                                     evidence=f"{self.path.name}:{line}: {text[:160]}", file=self.path.name,
                                     line=line))

    def resolve(self, node: ast.AST | None) -> str | None:
        return qualname(node, self.symbols)

    def string(self, node: ast.AST | None) -> str | None:
        return fold_string(node, self.symbols)


def lint_solution(solution_path: Path, spec) -> list[Finding]:
    """Lint a solution file against a problem spec (anything with `forbidden` / `forbidden_kernels`)."""
    solution_path = Path(solution_path)
    rules = rules_for_spec(spec)
    findings: list[Finding] = []
    for path in _python_files(solution_path):
        findings.extend(lint_python_file(path, rules))
    for path in sidecar_files(solution_path.parent):
        findings.extend(lint_cpp(path.read_text(errors="replace"), path.name, 1, rules))
    return as_leads(findings)


def lint_source(source: str, spec, name: str = "solution.py") -> list[Finding]:
    """Lint Python source text (unit tests and tools); local imports are not followed."""
    return as_leads(_lint_text(Path(name), source, rules_for_spec(spec)))


def as_leads(findings: list[Finding]) -> list[Finding]:
    """Findings of a class the run decides (RUN_DECIDES) are leads: warnings that keep their line, for the run's own
    evidence to confirm (an INVALID from the launch audit, the error size, the FP8 rule) or not."""
    return [f.model_copy(update={"severity": "warning", "message": f"lead: {f.message}"})
            if f.severity == "error" and f.klass in RUN_DECIDES else f for f in findings]


def lint_python_file(path: Path, rules: Rules) -> list[Finding]:
    return _lint_text(path, path.read_text(errors="replace"), rules)


def _lint_text(path: Path, source: str, rules: Rules) -> list[Finding]:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [finding(CHECK, 16, f"{path.name} does not parse: {exc.msg}", severity="warning",
                        evidence=f"{path.name}:{exc.lineno}", file=path.name, line=exc.lineno)]
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    linter = Linter(path, source, tree, rules, collect_symbols(tree), parents)
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        _visit(linter, node, docstrings)
    for text, line in inline_sources(tree, linter.symbols):
        linter.findings.extend(lint_cpp(text, path.name, line, rules))
    linter.findings.extend(lint_link_flags(tree, linter.symbols, rules, path.name))
    return linter.findings


def _python_files(solution_path: Path) -> list[Path]:
    """The solution and the local modules it imports (a helper module must not launder a forbidden call)."""
    todo: list[Path] = [solution_path]
    done: list[Path] = []
    while todo and len(done) < MAX_LOCAL_MODULES:
        path = todo.pop()
        if path in done or not path.is_file():
            continue
        done.append(path)
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        for module in _imported_modules(tree):
            if module.split(".")[0] in REFERENCE_MODULES:
                continue
            candidate = solution_path.parent / (module.replace(".", "/") + ".py")
            if candidate.is_file():
                todo.append(candidate)
    return done


def _imported_modules(tree: ast.AST) -> list[str]:
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
    return modules


def _docstring_nodes(tree: ast.AST) -> set[ast.AST]:
    nodes: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                nodes.add(first.value)
    return nodes


# --------------------------------------------------------------------------------------------- visitors

def _visit(linter: Linter, node: ast.AST, docstrings: set[ast.AST]) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        _check_import(linter, node)
    elif isinstance(node, ast.Call):
        _check_call(linter, node)
    elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        _check_assignment(linter, node)
    elif isinstance(node, ast.ClassDef):
        _check_class(linter, node)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        _check_function(linter, node)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and linter.rules.matmul_operator:
        linter.report(node, 1, "error", "uses the @ operator, a library matmul the problem forbids", "@")
    elif isinstance(node, ast.Raise):
        _check_raise(linter, node)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node not in docstrings:
        _check_string(linter, node)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and not _is_store(node):
        _check_reference(linter, node)
    if isinstance(node, ast.Attribute):
        _check_attribute(linter, node)


def _is_store(node: ast.AST) -> bool:
    return isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))


def _check_reference(linter: Linter, node: ast.AST) -> None:
    """Any expression that resolves to a forbidden, reference or sensitive name."""
    name = linter.resolve(node)
    if not name:
        return
    parent = linter.parents.get(node)
    if isinstance(parent, ast.Attribute) and parent.value is node and linter.resolve(parent):
        return  # judge the longest chain only (torch.cuda, then torch.cuda.synchronize)
    reason = _forbidden_reason(linter.rules, name)
    if reason:
        where = " in an except-handler fallback" if _inside_handler(linter, node) else ""
        linter.report(node, 1, "error", f"uses {name}{where} ({reason})", name)
    root = name.split(".")[0]
    if root in REFERENCE_MODULES and _builds_inputs(name):
        linter.report(node, 1, "warning", f"calls the problem's input builder {name} (it computes no output)", name)
    elif root in REFERENCE_MODULES and _reads_shape_global(linter, name, node):
        linter.report(node, 1, "warning", f"reads the reference's shape global {name}", name)
    elif root in REFERENCE_MODULES:
        linter.report(node, 1, "error", f"uses the problem's {root} module ({name})", name)
    if name == "sys.modules" or name.startswith("sys.modules."):
        _check_sys_modules(linter, node)
    if name in tables.SENSITIVE and not _sets_own_attribute(node, name, parent):
        klass, severity, why = tables.SENSITIVE[name]
        linter.report(node, klass, severity, f"{name}: {why}", name, lead=name in tables.CONFINED)
    elif name.startswith("torch.") and tables.PROFILER_NAME_RE.search(name) and \
            name.rsplit(".", 1)[-1] not in tables.PROFILER_ALLOWED_LEAVES:
        linter.report(node, 8, "error", f"uses {name}: asks about or drives torch's profiler (the launch audit "
                      "records under it; code can act differently when audited)", name)
    elif name.startswith("torch.backends.") and isinstance(parent, ast.Call) and parent.func is node:
        linter.report(node, 14, "warning", f"calls {name} (backend flags are pinned by the grader)", name)


OWN_SETATTR = ("builtins.object.__setattr__", "builtins.object.__delattr__")


def _sets_own_attribute(node: ast.AST, name: str, parent: ast.AST | None) -> bool:
    """`object.__setattr__(self, "x", v)` in a frozen dataclass's __post_init__: the object's own attribute, not a
    module's (a module as the first argument is reported by _check_setattr_method)."""
    return name in OWN_SETATTR and isinstance(parent, ast.Call) and parent.func is node and bool(parent.args) \
        and isinstance(parent.args[0], ast.Name) and parent.args[0].id in ("self", "cls")


OVERLOAD_NAMES = {"default", "out", "Tensor", "Scalar", "int", "dim", "values", "self", "vec", "dimname"}


def _check_sys_modules(linter: Linter, node: ast.AST) -> None:
    """`"kernelbench.eval.worker" in sys.modules`: probing for the grader is sniffing; other uses a note."""
    context = linter.parents.get(node)
    while isinstance(context, ast.Attribute):
        context = linter.parents.get(context)
    texts = [linter.string(n) for n in ast.walk(context)] if context is not None else []
    grader = next((t for t in texts if t and tables.GRADER_MODULE_RE.search(t)), None)
    parent = linter.parents.get(node)
    scans = (isinstance(parent, ast.Attribute) and parent.attr in ("values", "items", "keys", "copy")) or \
        isinstance(parent, (ast.comprehension, ast.For, ast.Call)) and not isinstance(parent, ast.Subscript)
    if grader:
        linter.report(node, 8, "error", f"looks up {grader!r} in sys.modules (detects the grader)", "sys.modules")
    elif scans:
        linter.report(node, 8, "error", "scans every loaded module (finds the grader's reference and state)",
                      "sys.modules")
    else:
        linter.report(node, 8, "warning", "reads sys.modules", "sys.modules")


def _forbidden_reason(rules: Rules, name: str) -> str | None:
    for listed in rules.names:
        if name == listed or name.startswith(listed + "."):
            return f"forbidden by problem.yaml: {listed}"
    parts = name.split(".")
    for package, why in rules.packages.items():
        if name == package or name.startswith(package + ".") or (package in parts[1:] and "." not in package):
            return why
    leaf = parts[-2] if parts[-1] in OVERLOAD_NAMES and len(parts) > 2 else parts[-1]  # torch.ops.aten.mm.default
    if leaf in rules.leaves and any(name == r or name.startswith(r + ".") for r in LIBRARY_ROOTS):
        return rules.leaves[leaf]
    return None


def _inside_handler(linter: Linter, node: ast.AST) -> bool:
    while node in linter.parents:
        node = linter.parents[node]
        if isinstance(node, ast.ExceptHandler):
            return True
    return False


def _check_import(linter: Linter, node: ast.Import | ast.ImportFrom) -> None:
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    if isinstance(node, ast.ImportFrom):
        modules += [f"{node.module}.{a.name}" for a in node.names if node.module]
    builders_only = _imports_input_builders_only(linter, node)
    for module in modules:
        root = module.split(".")[0]
        if root in REFERENCE_MODULES and builders_only:
            linter.report(node, 1, "warning", f"imports the problem's {root} module for its input builders only",
                          module)
        elif root in REFERENCE_MODULES:
            linter.report(node, 1, "error", f"imports the problem's {root} module", module)
        reason = _forbidden_reason(linter.rules, module)
        if reason:
            linter.report(node, 1, "error", f"imports {module} ({reason})", module)
        for noted in (module, root):
            if noted in tables.IMPORT_NOTES:
                klass, severity, why = tables.IMPORT_NOTES[noted]
                linter.report(node, klass, severity, why, noted)


def _builds_inputs(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 2 and parts[0] in REFERENCE_MODULES and parts[1] in INPUT_BUILDERS


def _reads_shape_global(linter: Linter, name: str, node: ast.AST) -> bool:
    parts = name.split(".")
    return len(parts) == 2 and parts[1] in linter.rules.shape_globals and not _is_store(node)


def _imports_input_builders_only(linter: Linter, node: ast.Import | ast.ImportFrom) -> bool:
    """`from reference import get_inputs`, or `import reference` where every use in the file is
    `reference.get_inputs` / `reference.get_init_inputs` or a read of a shape global: nothing of the reference's
    computation is reachable."""
    if isinstance(node, ast.ImportFrom):
        return node.module in REFERENCE_MODULES and all(a.name in INPUT_BUILDERS for a in node.names)
    if not all(a.name in REFERENCE_MODULES for a in node.names):
        return False
    for other in ast.walk(linter.tree):
        name = linter.resolve(other) if isinstance(other, (ast.Name, ast.Attribute)) else None
        if not name or name.split(".")[0] not in REFERENCE_MODULES:
            continue
        if isinstance(other, ast.Name) and _is_store(other):
            continue  # a local name bound to what the reference holds; its uses are judged where they are read
        parent = linter.parents.get(other)
        if isinstance(parent, ast.Attribute) and parent.value is other and linter.resolve(parent):
            continue  # judged by its longest chain
        if not (_builds_inputs(name) or _reads_shape_global(linter, name, other)):
            return False
    return True


def _check_call(linter: Linter, node: ast.Call) -> None:
    name = linter.resolve(node.func)
    if isinstance(node.func, ast.Attribute):  # `json.__dict__.__setitem__` resolves to a name, `vars(m).pop` not
        _check_namespace_write(linter, node)
        _check_setattr_method(linter, node)
    if name in ("builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.hasattr"):
        _check_dynamic_attr(linter, node, name)
    elif name in ("builtins.__import__", "importlib.import_module", "importlib.util.spec_from_file_location",
                  "importlib.machinery.SourceFileLoader", "runpy.run_path", "runpy.run_module"):
        _check_dynamic_import(linter, node, name)
    elif name in ("builtins.open", "io.open", "os.open", "pathlib.Path.open", "codecs.open", "io.FileIO",
                  "_io.FileIO", "_io.open"):
        _check_open(linter, node)
    elif name == "torch.set_float32_matmul_precision":
        mode = linter.string(node.args[0]) if node.args else None
        if mode != "highest":
            linter.report(node, 14, "error", f"torch.set_float32_matmul_precision({mode!r}) lowers float32 "
                          "matmul precision (TF32/bf16)")
    elif name in ("builtins.print",) or (name or "").endswith("stdout.write"):
        _check_print(linter, node)
    elif name and (name.startswith("os.environ") or name in ("os.putenv", "os.unsetenv", "os.getenv")):
        _check_env_call(linter, node, name)
    elif name == "builtins.type" and len(node.args) == 3 and isinstance(node.args[1], (ast.Tuple, ast.List)):
        _check_bases(linter, node, "a class built with type()", node.args[1].elts)
    elif name in ("torch.library.Library", "torch.library.impl", "torch.library.register_kernel"):
        _check_library(linter, node, name)
    elif name and name.startswith(("subprocess.", "os.exec", "os.spawn")):
        _check_subprocess(linter, node, name)
    elif name is None and isinstance(node.func, ast.Attribute):
        _check_method(linter, node, node.func.attr)


def _check_namespace_write(linter: Linter, node: ast.Call) -> None:
    """`vars(torch.cuda).update(...)`, `torch.__dict__.setdefault(...)`: monkeypatching without an assignment."""
    func = node.func
    assert isinstance(func, ast.Attribute)  # _check_call calls this for attribute calls only
    if func.attr not in ("update", "setdefault", "pop", "__setitem__", "__delitem__", "clear", "popitem"):
        return
    holder = func.value
    base = None
    if isinstance(holder, ast.Attribute) and holder.attr == "__dict__":
        base = linter.resolve(holder.value)
    elif isinstance(holder, ast.Call) and linter.resolve(holder.func) == "builtins.vars" and holder.args:
        base = linter.resolve(holder.args[0])
    if base:
        linter.report(node, 11, "error", f"changes the namespace of {base} through .{func.attr}() (monkeypatching)")


def _check_setattr_method(linter: Linter, node: ast.Call) -> None:
    """`type(m).__setattr__(m, "name", f)`, `ModuleType.__delattr__(m, "name")`: setattr spelt as a method."""
    func = node.func
    assert isinstance(func, ast.Attribute)  # _check_call calls this for attribute calls only
    if func.attr not in ("__setattr__", "__delattr__") or not node.args:
        return
    base = linter.resolve(node.args[0])  # a name the solution imported (a module, or something in one)
    if base:
        linter.report(node, 11, "error", f"{func.attr}() on {base} (monkeypatching a module)")


def _check_dynamic_attr(linter: Linter, node: ast.Call, name: str) -> None:
    if len(node.args) < 2:
        return
    base = linter.resolve(node.args[0])
    attr = linter.string(node.args[1])
    if name in ("builtins.setattr", "builtins.delattr") and base:
        linter.report(node, 11, "error", f"{name.split('.')[1]}() on {base} (monkeypatching a module)")
        return
    if attr in tables.REACH_ATTRIBUTES or attr in tables.FRAME_ATTRIBUTES:
        linter.report(node, 8, "error", f"getattr(..., {attr!r}) reaches objects the solution was not given "
                      "(other modules' code, the caller's frames)", attr)
        return
    if attr is not None and base is None:
        _check_method(linter, node, attr)  # getattr(path, "write_" + "text") is still a write
        return
    if attr is not None or base is None:
        return  # a constant attribute on a module resolves like a plain one
    built = is_string_built(node.args[1])
    linter.report(node, 1, "error" if built else "warning",
                  f"getattr on {base} with a name computed at run time"
                  + (" from string pieces (hides which op is called)" if built else ""))


def _check_dynamic_import(linter: Linter, node: ast.Call, name: str) -> None:
    target = [linter.string(a) for a in node.args]
    if name.startswith(("importlib.util", "importlib.machinery", "runpy")):
        location = target[1:] if name.endswith(("spec_from_file_location", "SourceFileLoader")) else target
        text = " ".join(t for t in location if t)
        if not location or None in location or tables.TEMPLATE_FILES_RE.search(text):
            linter.report(node, 1, "error", f"{name} loads {text or 'a path computed at run time'} (code the "
                          "lint cannot read, or the reference / grader's files)")
        return
    if not target or target[0] is None:
        linter.report(node, 1, "error", f"{name} of a module name computed at run time")


def _check_open(linter: Linter, node: ast.Call) -> None:
    path = linter.string(node.args[0]) if node.args else None
    mode_node = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                             None)
    mode = linter.string(mode_node) if mode_node is not None else "r"
    if path and tables.TEMPLATE_FILES_RE.search(path):
        writing = mode is None or any(c in mode for c in "wax+")
        klass = 12 if writing else (1 if "reference" in path or "sota" in path else 8)
        linter.report(node, klass, "error", f"opens the grading template file {path!r} (mode {mode!r})")
    elif mode is None or any(c in mode for c in "wax+"):
        _report_write(linter, node, f"opens a file for writing (mode {mode!r})")


def _report_write(linter: Linter, node: ast.AST, what: str) -> None:
    """File writes are errors, unless the function visibly works inside a temporary directory."""
    scope = _enclosing_function(linter, node)
    text = ast.unparse(scope) if scope is not None else ""
    temporary = any(t in text for t in ("tempfile", "mkdtemp", "gettempdir", "TemporaryDirectory", "'/tmp"))
    linter.report(node, 12, "warning" if temporary else "error",
                  what + (" in a temporary directory" if temporary else
                          " (the sandbox confines writes; the grader hashes and restores its templates)"),
                  lead=True)


def _enclosing_function(linter: Linter, node: ast.AST) -> ast.AST | None:
    while node in linter.parents:
        node = linter.parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return linter.tree


def _check_print(linter: Linter, node: ast.Call) -> None:
    for arg in node.args:
        text = linter.string(arg)
        if text and tables.VERDICT_TEXT_RE.search(text):
            linter.report(node, 12, "warning", f"prints a verdict-like message {text[:60]!r} (ignored by the "
                          "grader, which owns the verdict)")


def _check_env_call(linter: Linter, node: ast.Call, name: str) -> None:
    key = linter.string(node.args[0]) if node.args else None
    writing = name.endswith(("setdefault", "update", "putenv", "unsetenv", "pop", "__setitem__", "clear"))
    if writing:
        keys = [key] if key else [linter.string(k) for k in getattr(node.args[0], "keys", [])] if node.args else []
        for k in keys:
            _report_env_write(linter, node, k)
        if not keys or None in keys:
            _report_env_write(linter, node, key)
    elif key and tables.GRADER_ENV_RE.search(key):
        linter.report(node, 8, "error", f"reads the environment variable {key!r} (detects the grader)")


def _report_env_write(linter: Linter, node: ast.AST, key: str | None) -> None:
    if key in tables.TAMPER_ENV:
        klass, why = tables.TAMPER_ENV[key]
        linter.report(node, klass, "error", f"sets {key}: {why}", f"env:{key}", lead=key in tables.BUILD_CACHE_ENV)
    elif key and tables.GRADER_ENV_RE.search(key):
        linter.report(node, 11, "error", f"sets the grader's environment variable {key!r}", f"env:{key}")
    elif key is None:
        linter.report(node, 11, "warning", "changes an environment variable whose name is computed", "env:?")


def _check_library(linter: Linter, node: ast.Call, name: str) -> None:
    texts = [linter.string(a) or "" for a in node.args]
    if any(t == "aten" or t.startswith("aten::") for t in texts):
        linter.report(node, 11, "error", f"{name} overrides an aten operator ({', '.join(t for t in texts if t)})")


def _check_subprocess(linter: Linter, node: ast.Call, name: str) -> None:
    first = node.args[0] if node.args else None
    program = linter.string(first.elts[0]) if isinstance(first, (ast.List, ast.Tuple)) and first.elts else \
        linter.string(first)
    if program and program.split()[0].rsplit("/", 1)[-1] in ("nvcc", "ptxas", "cuobjdump", "nvdisasm"):
        linter.report(node, 12, "warning", f"{name} runs the CUDA toolchain ({program.split()[0]})",
                      "toolchain")


def _check_method(linter: Linter, node: ast.Call, method: str) -> None:
    reason = linter.rules.leaf_reason(method)
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    own = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and method in _defined_functions(linter)
    if reason and not own:
        if method in AMBIGUOUS_METHODS and not _looks_like_tensor_call(linter, node):
            linter.report(node, 1, "warning", f".{method}() on an object the lint cannot type ({reason})",
                          method)
        else:
            linter.report(node, 1, "error", f"calls the tensor method .{method}() ({reason})", method)
    if method in tables.WRITE_METHODS:
        _report_write(linter, node, f"calls .{method}()")
    elif method == "as_subclass":
        linter.report(node, 10, "error", ".as_subclass() returns a Tensor subclass")
    elif method in ("register_forward_hook", "register_forward_pre_hook") and _module_level(linter, node):
        linter.report(node, 11, "warning", f".{method}() at import time (hooks into the grader's modules)")


def _defined_functions(linter: Linter) -> set[str]:
    """Functions the solution defines itself: `self.matmul(...)` may be its own Triton wrapper."""
    return {n.name for n in ast.walk(linter.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _looks_like_tensor_call(linter: Linter, node: ast.Call) -> bool:
    if any(k.arg in TENSOR_KEYWORDS for k in node.keywords):
        return True
    return not isinstance(linter.parents.get(node), ast.Expr)  # list.sort() returns None: its value is unused


def _module_level(linter: Linter, node: ast.AST) -> bool:
    return _enclosing_function(linter, node) is linter.tree


def _check_assignment(linter: Linter, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    value = getattr(node, "value", None)
    for target in targets:
        for sub in ast.walk(target) if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            if isinstance(sub, (ast.Attribute, ast.Subscript)):
                _check_store(linter, node, sub, value)


# Modules only a build consults (a solution pointing load_inline at Python headers its workspace had, as a published
# top-k solution does with sysconfig.get_path): nothing the grader runs in the candidate's process uses them, so an
# assignment to them is a lead with its line, not an in-process tampering verdict.
BUILD_CONFIGURATION_MODULES = frozenset({"sysconfig", "distutils", "setuptools", "site"})


def _check_store(linter: Linter, node: ast.AST, target: ast.Attribute | ast.Subscript, value) -> None:
    base = linter.resolve(target.value)
    if base is None:
        return
    if isinstance(target, ast.Subscript):
        if base == "os.environ":
            _report_env_write(linter, node, linter.string(target.slice))
        else:
            linter.report(node, 11, "error", f"writes into {base}[...] (patches a module's namespace)")
        return
    name = f"{base}.{target.attr}"
    if name.startswith(("torch.backends.", "torch.set_")):
        lowered = isinstance(value, ast.Constant) and value.value in (False, None, "highest", "ieee")
        linter.report(node, 14, "warning" if lowered else "error", f"sets the backend flag {name} (the grader "
                      "pins backend flags; reduced-precision modes are a precision downgrade)", name)
    elif name.startswith(("torch._dynamo.config.", "torch._inductor.config.", "triton.knobs.")):
        linter.report(node, 11, "warning", f"changes compiler configuration {name}", name)
    elif name in ("sys.stdout", "sys.stderr", "sys.__stdout__"):
        linter.report(node, 12, "error", f"replaces {name} (forges or hides the grader's output)", name)
    elif name.split(".")[0] in BUILD_CONFIGURATION_MODULES:
        linter.report(node, 11, "warning", f"lead: assigns to {name} (build configuration, e.g. where headers are "
                      "found; the grader's judging and timing never call it)", name)
    elif name.split(".")[0] in REFERENCE_MODULES:
        # the reference the verdict rests on runs in the trusted judge's process; this rebinds the candidate's own
        # import of it, which the launch audit watches like any use of the reference
        linter.report(node, 1, "error", f"rebinds {name} in its own import of the problem's reference module", name)
    else:
        linter.report(node, 11, "error", f"assigns to {name} (monkeypatches a module the grader uses)", name)


def _check_class(linter: Linter, node: ast.ClassDef) -> None:
    _check_bases(linter, node, f"class {node.name}", node.bases)


def _check_bases(linter: Linter, node: ast.AST, label: str, bases: list[ast.expr]) -> None:
    for base_node in bases:
        base = linter.resolve(base_node) or ""
        if base.split(".")[0] in REFERENCE_MODULES:
            linter.report(node, 1, "error", f"{label} subclasses the reference ({base})")
        elif base in ("torch.Tensor", "torch.nn.Parameter", "torch._C.TensorBase", "torch._C._TensorBase",
                      "torch.nn.parameter.Parameter") or base.endswith(".Tensor"):
            linter.report(node, 10, "error", f"{label} subclasses {base} (outputs must be plain torch.Tensor)")
        elif base in tables.SENSITIVE:
            klass, severity, why = tables.SENSITIVE[base]
            linter.report(node, klass, severity, f"{label} subclasses {base}: {why}")


def _check_function(linter: Linter, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    if node.name in ("__torch_function__", "__torch_dispatch__"):
        linter.report(node, 10, "error", f"defines {node.name} (intercepts torch calls on its outputs)")
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = linter.resolve(target) or ""
        if name in ("functools.lru_cache", "functools.cache", "functools.cached_property"):
            linter.report(decorator, 7, "warning", f"{node.name} is memoised with {name} (the grader feeds "
                          "fresh inputs and re-checks after in-place overwrites)")


def _check_raise(linter: Linter, node: ast.Raise) -> None:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    name = linter.resolve(exc) if exc is not None else None
    if name in ("builtins.SystemExit", "builtins.KeyboardInterrupt", "builtins.GeneratorExit"):
        linter.report(node, 12, "error", f"raises {name.split('.')[1]} (exits the grader's process)")


def _check_string(linter: Linter, node: ast.Constant) -> None:
    text = node.value
    assert isinstance(text, str)  # _visit calls this for string constants only
    l2_match = tables.L2_PERSIST_RE.search(text)
    if l2_match:
        linter.report(node, 13, "error", f"names the L2 access-policy API ({l2_match.group(0)})"
                      + (" with streaming or normal properties only" if linter.l2_streaming else
                         ": a window that can keep operands resident through the flush"), "l2",
                      lead=linter.l2_streaming)
    if len(text) < 400 and tables.TEMPLATE_FILES_RE.search(text):
        if _searches_files(linter):
            linter.report(node, 8, "error", f"searches the file system for the grading file {text[:60]!r}",
                          "template")
        else:
            linter.report(node, 8, "warning", f"names a grading template file ({text[:60]!r})", "template")
    if len(text) < 400 and re.search(r"_profiler|profiler_|iler_enabled", text):
        linter.report(node, 8, "error", f"names torch's profiler state ({text[:60]!r}): acts differently when "
                      "audited", "profiler")
    if len(text) < 400 and tables.GRADING_ARTEFACT_RE.search(text):
        linter.report(node, 8, "error", f"names a file of the grading run ({text[:60]!r}): stored inputs and "
                      "outputs, or a stage marker (tells the timed stage from the checked one)", "artefact")
    frame_match = tables.FRAME_NAME_RE.search(text) if len(text) < 400 else None
    if frame_match:
        linter.report(node, 8, "error", f"names a frame or traceback attribute in a string "
                      f"({frame_match.group(0)!r}): reaches the caller's stack by getattr",
                      "frame")
    if len(text) < 400 and "kernelbench" in text.lower():
        linter.report(node, 8, "warning", f"names the grader's package ({text[:60]!r})", "kernelbench")
    if len(text) > 200_000:
        linter.report(node, 6, "warning", f"embeds a {len(text)}-character string (stored answers?)", "blob")


FILE_SEARCH = {"glob", "rglob", "iglob", "walk", "iterdir", "listdir", "scandir", "spec_from_file_location",
               "SourceFileLoader", "run_path", "fwalk"}


def _searches_files(linter: Linter) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr in FILE_SEARCH) or (isinstance(n, ast.Name) and
               linter.symbols.aliases.get(n.id, "").rsplit(".", 1)[-1] in FILE_SEARCH) for n in ast.walk(linter.tree))


def _check_attribute(linter: Linter, node: ast.Attribute) -> None:
    if node.attr in tables.REACH_ATTRIBUTES:
        linter.report(node, 8, "error", f".{node.attr} {tables.REACH_ATTRIBUTES[node.attr]}", node.attr)
    elif node.attr in tables.FRAME_ATTRIBUTES:
        linter.report(node, 8, "error", f"reads the frame attribute .{node.attr} (walks the caller's stack)")
    elif node.attr == "__traceback__":
        linter.report(node, 8, "error", "reads an exception's .__traceback__ (its frames lead to the caller's "
                      "stack)")
    elif node.attr == "_version" and not _is_store(node):
        # a warning, not a verdict: published solutions key one-time weight preparation on it (the way to notice
        # load_state_dict), and answers memoised on it are caught by the fresh and overwritten inputs
        linter.report(node, 7, "warning", "reads a tensor's ._version counter (memoisation, or a weight cache)")
    elif tables.L2_PERSIST_RE.fullmatch(node.attr):
        linter.report(node, 13, "error", f"uses .{node.attr} (persisting-L2 access policy)", "l2",
                      lead=linter.l2_streaming)
