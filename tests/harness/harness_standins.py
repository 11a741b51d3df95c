"""Stand-in agent CLIs: small scripts on a temporary PATH that behave like the real ones.

Each stand-in replays a real transcript fixture on stdout (or writes it where the real CLI keeps its session
files, under $HOME), records the argv and environment it was started with, and can misbehave on request: hang
(with a child process), flood its output, fail with a provider error, exit early.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

SCRIPT = r'''#!{python}
import json, os, subprocess, sys, time
from pathlib import Path

here = Path(__file__).resolve().parent
config = json.loads((here / (Path(sys.argv[0]).name + ".json")).read_text())
step = config.get("subcommands", {{}}).get(sys.argv[1] if len(sys.argv) > 1 else "", config)
home = Path(os.environ["HOME"])
(home / ".standin-calls.jsonl").open("a").write(json.dumps({{"argv": sys.argv, "cwd": os.getcwd(),
    "env": sorted(os.environ), "stdin": sys.stdin.read() if step.get("read_stdin") else None}}) + "\n")
for item in step.get("writes", []):
    target = home / item["dest"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((here / item["src"]).read_bytes())
if step.get("banner"):
    print(step["banner"], flush=True)
if step.get("stdout"):
    sys.stdout.buffer.write((here / step["stdout"]).read_bytes())
    sys.stdout.flush()
if step.get("stderr"):
    sys.stderr.write(step["stderr"])
    sys.stderr.flush()
if step.get("hang"):
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", step["hang"]])
    time.sleep(3600)
if step.get("flood"):
    line = b"x" * 4095 + b"\n"
    while True:
        sys.stdout.buffer.write(line)
sys.exit(step.get("exit_code", 0))
'''


class StandIns:
    """A bin folder of stand-in CLIs; put `bin` first on PATH."""

    def __init__(self, root: Path):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)

    def add(self, name: str, *, files: dict[str, Path | bytes | str] | None = None, **config) -> Path:
        for dest, source in (files or {}).items():
            target = self.bin / dest
            if isinstance(source, Path):
                shutil.copyfile(source, target)
            else:
                target.write_bytes(source.encode() if isinstance(source, str) else source)
        (self.bin / f"{name}.json").write_text(json.dumps(config))
        script = self.bin / name
        script.write_text(SCRIPT.format(python=sys.executable))
        script.chmod(0o755)
        return script


def calls(home: Path) -> list[dict]:
    path = home / ".standin-calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
