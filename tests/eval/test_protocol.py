"""No dict crosses a process boundary of the grader untyped (kernelbench.eval.protocol).

- every model a stage process reads or writes, and every model nested in one, forbids undeclared keys, and its
  fields are typed all the way down (the problem's own shape values and nothing else are left open);
- a job with an undeclared key is refused by a real worker process, a reply with one by the grader;
- the jobs a real grading plan builds validate and survive the trip through JSON;
- the grader's code reads no message by string key (`x["k"]`, `x.get("k")`, `getattr(x, "k", default)`: the
  only such reads left are on the dicts listed below, none of them a stage message), and every attribute it reads
  from a parameter or variable annotated with a message type is a field, property or method of that type.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from kernelbench.eval import protocol
from kernelbench.eval.integrity import counter_probe
from tests.eval.conftest import minimal_job

PACKAGE = Path(protocol.__file__).resolve().parents[1]
EVAL = PACKAGE / "eval"
# the grader's modules: the orchestrator, its stages, the stage processes and what they exchange
GRADER_MODULES = sorted([*(EVAL / n for n in ("grade.py", "grading.py", "process.py", "verdict.py", "gradelog.py",
                                              "baselines.py", "problem_check.py", "environment.py", "tensorfile.py",
                                              "protocol.py", "failures.py")),
                         *(EVAL / "stages").glob("*.py"), *(EVAL / "worker").glob("*.py"),
                         *(EVAL / "integrity" / n for n in ("counters.py", "counter_probe.py", "hooks.py",
                                                             "templates.py"))])
MESSAGE_ROOTS = [protocol.StageInput, protocol.JudgeReply, protocol.CheckReply, protocol.BenchReply,
                 protocol.FreshReply, protocol.StageFailure, protocol.InputLayout, protocol.TensorHeader,
                 counter_probe.ProbeJob, counter_probe.ProbeStatus]
# fields left open on purpose: a problem's shape is whatever keys its problem.yaml gives it
OPEN_FIELDS = {("Case", "shape"), ("ProbeJob", "shape")}
# string-keyed reads in the grader that are not on a stage message, by the expression read and why
KEYED_READS = {
    "state.stages": "the grading's clock: seconds per stage name, reported as one open table",
    "env": "a process environment",
    "os.environ": "this process's environment (the GPUs it was given)",
    "self.options.limits": "the stage limits the user gave, by stage name",
    "build_env": "the compile caches' environment variables",
    "row": "a row of ncu's CSV report",
    "Literal": "a type annotation",
    "ref": "the reference module's optional compare() hook (docs/grading.md, contract 2)",
    "self.reference": "the reference module's optional compare() hook (docs/grading.md, contract 2)",
    "ctx.reference": "the reference module's optional compare() hook (docs/grading.md, contract 2)",
    "judge.ctx.reference": "the reference module's optional oracle() hook (docs/grading.md, contract 2)",
    "torch": "a dtype named in a tensor file's header, checked to be a torch.dtype",
    "props": "CUDA device properties (L2_cache_size is missing from older torch builds)",
}


def nested_models(model: type[BaseModel], seen: set | None = None) -> set[type[BaseModel]]:
    seen = set() if seen is None else seen
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for arg in _flatten(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                nested_models(arg, seen)
    return seen


def _flatten(annotation) -> list:
    args = typing.get_args(annotation)
    return [annotation] if not args else [a for arg in args for a in _flatten(arg)] + [typing.get_origin(annotation)]


ALL_MESSAGES = sorted({m for root in MESSAGE_ROOTS for m in nested_models(root)}, key=lambda m: m.__name__)


@pytest.mark.parametrize("model", ALL_MESSAGES, ids=[m.__name__ for m in ALL_MESSAGES])
def test_every_message_forbids_undeclared_keys_and_is_typed(model):
    assert model.model_config.get("extra") == "forbid", f"{model.__name__} accepts undeclared keys"
    for name, field in model.model_fields.items():
        if (model.__name__, name) in OPEN_FIELDS:
            continue
        assert typing.Any not in _flatten(field.annotation), f"{model.__name__}.{name} is {field.annotation}"


def test_the_models_nested_in_messages_include_the_shared_ones():
    names = {m.__name__ for m in ALL_MESSAGES}
    assert {"Case", "Tolerance", "Finding", "CaseVerdict", "ShapeTiming", "KeptCall", "TimingSettings"} <= names


def test_a_job_with_an_undeclared_key_is_refused_by_a_real_worker(tmp_path):
    job = minimal_job("check", tmp_path)
    payload = protocol.StageInput(key="00" * 32, job=job).model_dump(mode="json")
    payload["job"]["expected_dri"] = str(tmp_path)  # a misspelt key
    proc = subprocess.run([sys.executable, "-P", "-m", "kernelbench.eval.worker"], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode != 0 and "expected_dri" in proc.stderr and "Extra inputs are not permitted" in proc.stderr
    assert not (tmp_path / protocol.RESULT).exists()


def test_a_reply_with_an_undeclared_key_is_refused_by_the_grader():
    from kernelbench.eval.process import read_reply

    good = protocol.CheckReply(cases={"c": protocol.CaseRecord(saved=True)}).model_dump_json().encode()
    reply, error = read_reply("check", good)
    assert isinstance(reply, protocol.CheckReply) and error == ""
    forged = good.replace(b'"saved":true', b'"saved":true,"passed":true')
    reply, error = read_reply("check", forged)
    assert reply is None and "does not follow the protocol" in error and "passed" in error
    other = protocol.FreshReply(fresh=[]).model_dump_json().encode()
    assert read_reply("check", other) == (None, "check stage replied as a fresh stage")


def test_the_jobs_a_grading_builds_validate_and_survive_json(tmp_path, toy_problem):
    from kernelbench.eval.grading import GradingOptions, GradingPlan
    from kernelbench.eval.integrity.hooks import load_guards
    from kernelbench.problems.problem import open_problem

    plan = GradingPlan.create(toy_problem / "reference.py", open_problem(toy_problem), tmp_path, GradingOptions(device="cpu",
                              shapes="smoke"), load_guards())
    jobs = [plan.judge_job(plan.cases, check_dir=str(tmp_path / "check")), plan.check_job(),
            plan.bench_job(plan.timing_cases(), expected_dir=str(tmp_path / "check"), expected_prefix="out",
                           judge_timed=True, rotation_seed=3),
            plan.fresh_job(bench_dir=str(tmp_path / "bench"), fresh=[protocol.KeptCall(case="c", seed=1, call=2, of=3,
                                                                                       file="f.kbt")])]
    for job in jobs:
        sent = protocol.StageInput(key="ab", job=job).model_dump_json()
        assert protocol.StageInput.model_validate_json(sent).job == job


# ------------------------------------------------------------------------------------------------- static reads

def _keyed_reads(tree: ast.AST) -> list[tuple[int, str, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str) and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, ast.unparse(node.value), node.slice.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, ast.unparse(node.func.value), node.args[0].value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) == 3:
            found.append((node.lineno, ast.unparse(node.args[0]), ast.unparse(node.args[1])))
    return found


@pytest.mark.parametrize("path", GRADER_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in GRADER_MODULES])
def test_the_grader_reads_no_message_by_string_key(path):
    unexpected = [f"{path.name}:{line}: {receiver}[{key!r}]" for line, receiver, key in
                  _keyed_reads(ast.parse(path.read_text())) if receiver not in KEYED_READS]
    assert not unexpected, "string-keyed reads outside the known non-message dicts:\n" + "\n".join(unexpected)


def _message_types() -> dict[str, type[BaseModel]]:
    return {**{m.__name__: m for m in ALL_MESSAGES}, "StageJob": protocol.StageJob,
            "CandidateReport": protocol.CandidateReport}


def _declared(model: type[BaseModel]) -> set[str]:
    """What reading an attribute of `model` (or of a subclass it may be narrowed to) can name."""
    kinds = [model, *[m for m in _message_types().values() if issubclass(m, model)]]
    return {name for kind in kinds for name in (*kind.model_fields, *dir(kind))}


def _union_members(annotation: ast.expr) -> list[str]:
    """The names of `X`, `X | None`, `X | Y`: a value of that type itself (not a container of it)."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _union_members(annotation.left) + _union_members(annotation.right)
    return [annotation.id] if isinstance(annotation, ast.Name) else []


def _annotated_names(function: ast.FunctionDef) -> dict[str, list[type[BaseModel]]]:
    types = _message_types()
    annotated = [(arg.arg, arg.annotation) for arg in [*function.args.args, *function.args.kwonlyargs]
                 if arg.annotation is not None]
    annotated += [(node.target.id, node.annotation) for node in ast.walk(function)
                  if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)]
    names: dict[str, list[type[BaseModel]]] = {}
    for name, annotation in annotated:
        kinds = [types[n] for n in _union_members(annotation) if n in types]
        if kinds:
            names[name] = kinds
    return names


def _read_from(node: ast.Attribute, typed: dict[str, list[type[BaseModel]]]) -> list[type[BaseModel]]:
    """The message types `node.value` may hold: an annotated name, or a stage's job (`job`, `ctx.job`, ...: in the
    grader `job` always names a StageJob) where nothing is annotated."""
    value = node.value
    if isinstance(value, ast.Name) and value.id in typed:
        return typed[value.id]
    if (isinstance(value, ast.Name) and value.id == "job") or (isinstance(value, ast.Attribute) and value.attr == "job"):
        return [protocol.StageJob]
    return []


@pytest.mark.parametrize("path", GRADER_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in GRADER_MODULES])
def test_every_attribute_read_from_a_typed_message_is_declared(path):
    wrong = []
    for function in [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]:
        typed = _annotated_names(function)
        for node in ast.walk(function):
            kinds = _read_from(node, typed) if isinstance(node, ast.Attribute) else []
            if kinds and not any(node.attr in _declared(kind) for kind in kinds):
                wrong.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, "attributes no message type declares:\n" + "\n".join(wrong)


def test_the_attribute_check_sees_a_misspelt_field():
    source = inspect.cleandoc('''
        def f(timing: ShapeTiming, job: BenchJob | FreshJob):
            return timing.sampels_ms, job.bench_dir, job.expected_dir
    ''')
    function = ast.parse(source).body[0]
    typed = _annotated_names(function)
    read = [(n.value.id, n.attr) for n in ast.walk(function) if isinstance(n, ast.Attribute)]
    undeclared = [(v, a) for v, a in read if not any(a in _declared(k) for k in typed[v])]
    assert undeclared == [("timing", "sampels_ms")]
