"""Writing annotation YAML that people will read and edit: keys in model order, multi-line text as `|` blocks.

Every dump is read back with the project's loader and compared, so quoted text survives byte for byte (PyYAML
falls back to a quoted style by itself when a block cannot hold a string exactly, e.g. trailing spaces).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import load_yaml, parse_model
from kernelbench.results.annotation import Annotation


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _flow_list(dumper: yaml.SafeDumper, value: list) -> yaml.SequenceNode:
    # [first, last] line pairs read best inline; other lists stay in block style
    flow = len(value) == 2 and all(isinstance(v, int) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


_Dumper.add_representer(list, _flow_list)


def dump_annotation(annotation: Annotation, path: Path | str = "<annotation>") -> str:
    """YAML text of an annotation; raises if reading it back would not give the same annotation."""
    data = annotation.model_dump(mode="json", exclude_none=True)
    if data.get("version") == 1:
        data.pop("version")
    text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    again = parse_model(Path(path), Annotation, load_yaml(Path(path), text))
    if again != annotation:
        raise KernelBenchError("the annotation does not survive a YAML round trip", path=path,
                               hint="report this with the quoted text that caused it")
    return text


def write_new_file(path: Path, text: str) -> None:
    """Write a file atomically and only if it does not exist yet (hard link of a finished temp file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise KernelBenchError("already exists; not overwritten", path=path,
                                   hint="edit the existing file, or delete it first to start again") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
