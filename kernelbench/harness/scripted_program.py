"""The scripted agent's program: follows a resolved plan inside the workspace, streaming JSON events on stdout.

It is copied into the agent's home and run inside the sandbox like any agent CLI, so it depends on the standard
library only (the kernelbench package is not visible there). Usage: python agent.py PLAN.json < PROMPT
"""

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

MAX_OUTPUT = 20_000


class Agent:
    def __init__(self, plan):
        self.plan = plan
        self.calls = 0
        self.last_exit = 0

    def emit(self, **record):
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()

    def call(self, name, args):
        self.calls += 1
        call_id = f"call-{self.calls}"
        self.emit(type="tool_call", id=call_id, name=name, input=args)
        return call_id

    def run_steps(self, steps):
        for step in steps:
            action = next(iter(step))
            getattr(self, "do_" + action)(step[action])

    def do_say(self, text):
        self.emit(type="assistant", text=text)

    def do_think(self, text):
        self.emit(type="thinking", text=text)

    def do_write(self, spec):
        path = Path(spec["to"])
        call_id = self.call("Write", {"file_path": spec["to"], "content": spec["content"]})
        before = path.read_text() if path.is_file() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec["content"])
        self.emit(type="file_edit", path=spec["to"], before=before, after=spec["content"])
        self.emit(type="tool_result", id=call_id, output=f"wrote {len(spec['content'])} bytes to {spec['to']}",
                  exit_code=0, is_error=False)

    def do_edit(self, spec):
        path = Path(spec["file"])
        call_id = self.call("Edit", {"file_path": spec["file"], "old_string": spec["find"],
                                     "new_string": spec["replace"]})
        text = path.read_text() if path.is_file() else ""
        if spec["find"] not in text:
            self.emit(type="tool_result", id=call_id, output="old_string not found", exit_code=1, is_error=True)
            return
        after = text.replace(spec["find"], spec["replace"], 1)
        path.write_text(after)
        self.emit(type="file_edit", path=spec["file"], before=text, after=after)
        self.emit(type="tool_result", id=call_id, output=f"edited {spec['file']}", exit_code=0, is_error=False)

    def do_run(self, spec):
        command, timeout = spec["command"], spec.get("timeout")
        call_id = self.call("Bash", {"command": command})
        start = time.monotonic()
        if command.startswith("python "):  # machines without a `python` on PATH still run the plan
            command = shlex.quote(sys.executable) + command[len("python"):]
        try:
            proc = subprocess.run(command, shell=True, capture_output=True, timeout=timeout)
            output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
            self.last_exit = proc.returncode
        except subprocess.TimeoutExpired:
            output, self.last_exit = f"timed out after {timeout} s", 124
        if len(output) > MAX_OUTPUT:
            output = output[:MAX_OUTPUT // 2] + "\n… (output truncated)\n" + output[-MAX_OUTPUT // 2:]
        self.emit(type="tool_result", id=call_id, output=output, exit_code=self.last_exit,
                  is_error=self.last_exit != 0, duration_s=round(time.monotonic() - start, 3))

    def do_sleep(self, seconds):
        time.sleep(float(seconds))

    def do_if_failed(self, steps):
        if self.last_exit != 0:
            self.run_steps(steps)


def main():
    plan = json.loads(Path(sys.argv[1]).read_text())
    prompt = sys.stdin.read()
    agent = Agent(plan)
    agent.emit(type="start", plan=plan["name"], cwd=str(Path.cwd()))
    agent.emit(type="user", text=prompt)
    agent.run_steps(plan["steps"])
    agent.emit(type="done")


if __name__ == "__main__":
    main()
