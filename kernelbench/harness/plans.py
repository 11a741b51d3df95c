"""Plans for the scripted offline agent: a fixed list of steps (write a solution, run check.py, revise, ...).

A plan is a YAML file under `sweeps/plans/` of the project; `scripted:<name>` finds it by name,
`scripted:path/to/plan.yaml` by path. Paths in `write.from` are relative to the project root (the folder holding
`problems/`) and may use `{problem}`; a list means "the first that exists". The harness inlines their content
before the agent starts, since nothing outside the workspace is visible from the sandbox. In a run graded on the
smoke shapes, `python check.py` and `python benchmark.py` get `--smoke`, as a person would tell the agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_yaml_model

PLANS_DIR = Path("sweeps") / "plans"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class WriteStep(Strict):
    to: str = "solution.py"
    source: str | list[str] | None = Field(None, alias="from")  # a file (or the first existing of several)
    text: str | None = None                           # or the content itself

    @model_validator(mode="after")
    def _one_source(self) -> "WriteStep":
        if (self.source is None) == (self.text is None):
            raise ValueError("give exactly one of 'from' (a file) and 'text' (the content)")
        return self


class EditStep(Strict):
    file: str
    find: str
    replace: str


class RunStep(Strict):
    command: str
    timeout: float | None = None


class Step(Strict):
    """Exactly one action per step."""

    say: str | None = None
    think: str | None = None
    write: WriteStep | None = None
    edit: EditStep | None = None
    run: RunStep | str | None = None
    sleep: float | None = None
    if_failed: list["Step"] | None = None

    @model_validator(mode="after")
    def _one_action(self) -> "Step":
        actions = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if len(actions) != 1:
            raise ValueError(f"a step holds exactly one action, found {actions or 'none'}")
        return self


class Plan(Strict):
    name: str
    description: str = ""
    steps: list[Step] = Field(min_length=1)


def find_plan(name: str, search: list[Path] | None = None) -> Path:
    """A plan by name (built-in or under sweeps/plans of the given roots) or by path."""
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml"):
        if candidate.is_file():
            return candidate
        raise KernelBenchError("no such plan file", path=candidate, hint="check the path after 'scripted:'")
    folders = [Path(s) / PLANS_DIR for s in (search or [])] + [PLANS_DIR]
    for folder in folders:
        path = folder / f"{name}.yaml"
        if path.is_file():
            return path
    known = sorted({p.stem for f in folders if f.is_dir() for p in f.glob("*.yaml")})
    raise KernelBenchError(f"no scripted plan named '{name}'", hint=f"known plans: {', '.join(known)}")


def load_plan(path: Path) -> Plan:
    return load_yaml_model(path, Plan)


def resolve_plan(plan: Plan, plan_path: Path, problem_id: str, root: Path, shapes: str = "full") -> dict[str, Any]:
    """The plan as the agent program reads it: `{problem}` filled and every file's content inlined."""
    return {"name": plan.name, "steps": [_resolve(s, plan_path, problem_id, root, shapes) for s in plan.steps]}


SMOKE_SCRIPTS = ("python check.py", "python benchmark.py")


def _resolve(step: Step, plan_path: Path, problem_id: str, root: Path, shapes: str) -> dict[str, Any]:
    if step.write is not None:
        return {"write": {"to": step.write.to, "content": _content(step.write, plan_path, problem_id, root)}}
    if step.run is not None:
        run = step.run if isinstance(step.run, RunStep) else RunStep(command=step.run)
        if shapes == "smoke" and run.command.strip() in SMOKE_SCRIPTS:
            run = run.model_copy(update={"command": run.command.strip() + " --smoke"})
        return {"run": run.model_dump()}
    if step.if_failed is not None:
        return {"if_failed": [_resolve(s, plan_path, problem_id, root, shapes) for s in step.if_failed]}
    if step.edit is not None:
        return {"edit": step.edit.model_dump()}
    key = next(k for k in ("say", "think", "sleep") if getattr(step, k) is not None)
    value = getattr(step, key)
    return {key: value.replace("{problem}", problem_id) if isinstance(value, str) else value}


def _content(write: WriteStep, plan_path: Path, problem_id: str, root: Path) -> str:
    if write.text is not None:
        return write.text.replace("{problem}", problem_id)
    assert write.source is not None  # a write step holds exactly one of text and 'from' (_one_source)
    sources = [write.source] if isinstance(write.source, str) else write.source
    for source in sources:
        path = Path(source.replace("{problem}", problem_id))
        path = path if path.is_absolute() else root / path
        if path.is_file():
            return path.read_text(encoding="utf-8")
    tried = ", ".join(s.replace("{problem}", problem_id) for s in sources)
    raise KernelBenchError(f"plan '{plan_path.stem}' writes {tried}, which does not exist under {root}",
                           path=plan_path, hint=f"add the file, or leave {problem_id} out of the sweep for this plan")


def plan_sources(plan: Plan) -> list[str]:
    """Every file a plan reads (`{problem}` unfilled), for checking a sweep before it starts."""
    found: list[str] = []

    def walk(steps: list[Step]) -> None:
        for step in steps:
            if step.write is not None and step.write.source:
                source = step.write.source
                found.extend([source] if isinstance(source, str) else source)
            if step.if_failed:
                walk(step.if_failed)

    walk(plan.steps)
    return found
