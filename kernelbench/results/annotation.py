"""`annotations/<run_id>.yaml` (an auditor's verdict on one run) and writeup front matter."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kernelbench.base.numbers import Fraction, LineNumber, Version
from kernelbench.results.verdicts import Verdict

ANNOTATION_VERSION = 1


class Quote(BaseModel):
    """Lines quoted from a file of the run directory; `text` must equal those lines verbatim."""

    model_config = ConfigDict(extra="forbid")

    file: str
    lines: list[LineNumber] = Field(min_length=2, max_length=2)
    label: str = ""
    text: str

    @field_validator("lines")
    @classmethod
    def _ordered(cls, value: list[int]) -> list[int]:
        if value[0] < 1 or value[1] < value[0]:
            raise ValueError("lines must be [first, last] with 1 <= first <= last")
        return value

    @field_validator("file")
    @classmethod
    def _inside_run(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError("file must be a path inside the run directory")
        return value


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Version = ANNOTATION_VERSION
    run_id: str
    model: str | None = None
    harness: str | None = None
    effort: str | None = None
    problem: str | None = None
    peak_fraction: Fraction | None = None
    verdict: Verdict
    summary: str
    quotes: list[Quote] = Field(default_factory=list)
    implication: str | None = None
    auditor: str | None = None
    date: str | None = None

    @model_validator(mode="after")
    def _implication_unless_clean(self) -> "Annotation":
        if self.verdict is not Verdict.CLEAN and not (self.implication or "").strip():
            raise ValueError(f"verdict '{self.verdict.value}' needs an 'implication' (what this means for the score)")
        return self


class WriteupMeta(BaseModel):
    """Front matter of `annotations/writeups/<slug>.md`."""

    model_config = ConfigDict(extra="forbid")

    title: str
    problem: str | None = None
    verdict: Verdict
    runs: list[str] = Field(default_factory=list)
    date: str | None = None
    author: str | None = None
