"""The stand-in's policy file: what the model does turn by turn, and which faults the server plays.

    name: eager-then-check
    steps:
      - say: "Reading the task first."
        read: PROMPT.txt
      - say: "Writing the solution."
        write: {path: solution.py, from: ../../solutions/eager/{problem}.py}
      - run: python check.py
      - finish: "check.py said: {last_output}"
    faults:
      - {fault: server_error, step: 1, times: 1}

One step is one model turn: optional text, then at most one tool action (`read`, `write`, `run`) or the final
message (`finish`, the last step). `from` is relative to the policy file; `{problem}` is filled by the server.
A fault applies to the requests of its step (0-based), to its first `times` attempts (all of them when omitted).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelbench.errors import KernelBenchError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Write(Strict):
    path: str = "solution.py"
    source: str | None = Field(None, alias="from")   # a file, relative to the policy file
    text: str | None = None                          # or the content itself

    @model_validator(mode="after")
    def _one_source(self) -> Write:
        if (self.source is None) == (self.text is None):
            raise ValueError("give exactly one of 'from' (a file) and 'text' (the content)")
        return self


class Step(Strict):
    say: str | None = None
    read: str | None = None
    write: Write | None = None
    run: str | None = None
    finish: str | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        actions = [k for k in ("read", "write", "run", "finish") if getattr(self, k) is not None]
        if len(actions) > 1:
            raise ValueError(f"a step holds at most one action, found {', '.join(actions)}")
        if not actions and self.say is None:
            raise ValueError("a step needs an action (read, write, run, finish) or a 'say'")
        return self

    @property
    def action(self) -> str | None:
        return next((k for k in ("read", "write", "run") if getattr(self, k) is not None), None)


class FaultKind(StrEnum):
    RATE_LIMIT = "rate_limit"        # HTTP 429, retryable
    OVERLOADED = "overloaded"        # HTTP 529 (Anthropic) / 503 (others), retryable
    UNAUTHORIZED = "unauthorized"    # HTTP 401, not retryable
    SERVER_ERROR = "server_error"    # HTTP 500, retryable
    STALL = "stall"                  # the stream starts, then nothing more is sent
    CUT = "cut"                      # the stream ends in the middle of an event
    REJECT_TOOL = "reject_tool"      # the model calls a tool the CLI does not have


class Fault(Strict):
    fault: FaultKind
    step: int = Field(0, ge=0)
    times: int | None = Field(None, ge=1)   # attempts it applies to; None: every attempt


class UsageRates(Strict):
    """Token counts reported like the real API's: input from the request's size, output from the reply's."""

    chars_per_token: float = Field(4.0, gt=0)
    cached_fraction: float = Field(0.0, ge=0, le=1)


class Policy(Strict):
    name: str
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    faults: list[Fault] = Field(default_factory=list)
    usage: UsageRates = Field(default_factory=UsageRates)

    @model_validator(mode="after")
    def _ends_with_finish(self) -> Policy:
        last = self.steps[-1]
        if last.finish is None:
            raise ValueError("the last step must be a 'finish' (the model's final message)")
        if any(s.finish is not None for s in self.steps[:-1]):
            raise ValueError("only the last step may 'finish'")
        return self

    def fault_for(self, step: int, attempt: int) -> Fault | None:
        """The fault of this step's `attempt`-th request (1-based), if any."""
        for fault in self.faults:
            if fault.step == step and (fault.times is None or attempt <= fault.times):
                return fault
        return None


class LoadedPolicy(BaseModel):
    """A policy with its files read: the server never touches the disk while it answers."""

    policy: Policy
    path: Path
    contents: dict[int, str] = Field(default_factory=dict)   # step index → the text its `write` puts in the file


def load_policy(path: Path | str, problem: str | None = None) -> LoadedPolicy:
    """Read and check a policy file (errors name the file and line) and the files its steps write."""
    from kernelbench.fileio import load_yaml_model

    path = Path(path)
    if not path.is_file():
        raise KernelBenchError("no such stand-in policy file", path=path,
                               hint="give a YAML policy, e.g. tests/harness/standin/eager.yaml")
    policy = load_yaml_model(path, Policy)
    contents = {}
    for index, step in enumerate(policy.steps):
        if step.write is None:
            continue
        if step.write.text is not None:
            contents[index] = step.write.text
            continue
        assert step.write.source is not None  # a write holds exactly one of text and 'from' (_one_source)
        source = step.write.source.replace("{problem}", problem or "{problem}")
        file = (path.parent / source).resolve()
        if not file.is_file():
            raise KernelBenchError(f"step {index + 1} writes from {source}, which does not exist ({file})",
                                   path=path, hint="fix the path (relative to the policy file) or give --problem")
        contents[index] = file.read_text(encoding="utf-8")
    return LoadedPolicy(policy=policy, path=path, contents=contents)
