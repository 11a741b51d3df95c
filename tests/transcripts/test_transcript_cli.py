"""The real commands, end to end: `kernelbench transcript show|convert|html`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.transcripts import NormalizedWriter, load
from kernelbench.transcripts.redact import redact_text

KEYS = {"format", "version", "models", "events_total", "events_by_kind", "tool_calls_total", "tool_calls_by_name",
        "tokens", "duration_s", "complete", "unknown_records", "unknown_records_total", "cost_usd",
        "cost_is_estimate"}


def kernelbench(*args: str) -> subprocess.CompletedProcess:
    """The installed command in a fresh process (slow to start: used for a few end-to-end checks)."""
    return subprocess.run([sys.executable, "-m", "kernelbench", *args], capture_output=True, text=True, timeout=300,
                          check=False)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    """The same command line through `kernelbench.cli.main`, in this process."""
    from kernelbench.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_json_on_one_file_per_folder(tx: Path, capsys) -> None:
    expected = {"claude-session": "claude-session", "claude-stream": "claude-stream", "codex-rollout": "codex-rollout",
                "codex-exec": "codex-exec", "opencode-export": "opencode-export", "gemini-session": "gemini-session",
                "kimi-wire": "kimi-wire"}
    for folder, fmt in expected.items():
        path = max((p for p in (tx / folder).iterdir() if p.name != "state.json"), key=lambda p: p.stat().st_size)
        code, out, err = run_main(capsys, "transcript", "show", str(path), "--json")
        assert code == 0, err
        summary = json.loads(out)
        assert KEYS <= summary.keys()
        assert summary["format"] == fmt
        assert summary["tool_calls_total"] == sum(summary["tool_calls_by_name"].values())
        assert summary["tokens"]["total"] == sum(summary["tokens"][k] for k in
                                                 ("input", "output", "cache_read", "cache_write"))


def test_show_end_to_end_in_a_fresh_process(tx: Path) -> None:
    done = kernelbench("transcript", "show", str(tx / "kimi-wire" / "state.json"))  # Kimi's state, no transcript
    assert done.returncode == 2 and "no transcript format recognised" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    done = kernelbench("transcript", "show", str(tx / "codex-exec" / "stream-output-5.jsonl"), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["tool_calls_by_name"] == {"shell": 1}


def test_show_missing_file_is_a_clear_error(tmp_path: Path, capsys) -> None:
    code, _, err = run_main(capsys, "transcript", "show", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl" in err and "Traceback" not in err


def test_help_has_examples(capsys) -> None:
    for command in (("transcript", "show", "--help"), ("transcript", "convert", "--help"),
                    ("transcript", "html", "--help")):
        with pytest.raises(SystemExit) as exited:
            run_main(capsys, *command)
        assert exited.value.code == 0 and "examples:" in capsys.readouterr().out


def test_convert_redacts_secrets_and_home_paths(tmp_path: Path) -> None:
    source = tmp_path / "raw.jsonl"
    secret = "sk-ant-api03-" + "A" * 40
    with NormalizedWriter(source, harness="scripted", cwd="/home/alice/work") as log:
        log.user(f"use ANTHROPIC_API_KEY={secret} and curl -H 'Authorization: Bearer abcdefghijklmnop1234567890'")
        call = log.tool_call("Bash", {"command": "cat /Users/bob/.ssh/config", "env": {"TOKEN": "ghp_" + "x" * 36}})
        log.tool_result(call, "blob: " + "QUJD" * 100)
    out = tmp_path / "clean.jsonl"
    done = kernelbench("transcript", "convert", str(source), "-o", str(out), "--redact", "--redact-base64")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    for leaked in (secret, "abcdefghijklmnop1234567890", "/home/alice", "/Users/bob", "ghp_", "QUJDQUJD"):
        assert leaked not in text, leaked
    session = load(out)
    assert session.cwd == "~/work" and "[REDACTED]" in session.events[0].text
    assert "[base64 blob, 400 characters]" in session.events[2].output


def test_redaction_leaves_ordinary_text_alone() -> None:
    text = "the token count was 1200; see kernel.cu line 40 and /usr/local/cuda/include"
    assert redact_text(text) == text


def test_convert_then_show_round_trip(tx: Path, tmp_path: Path, capsys) -> None:
    source = tx / "codex-rollout" / "codex-rollout-2026-02-26T15-29-14-019c9b36-51d0-7350-a2a9-acb3de53c455.jsonl"
    out = tmp_path / "n.jsonl"
    assert run_main(capsys, "transcript", "convert", str(source), "-o", str(out))[0] == 0
    before = json.loads(run_main(capsys, "transcript", "show", str(source), "--json")[1])
    after = json.loads(run_main(capsys, "transcript", "show", str(out), "--json")[1])
    assert after["format"] == "normalized"
    for key in ("events_by_kind", "tool_calls_by_name", "tokens", "complete"):
        assert after[key] == before[key]


def test_html_command_writes_a_page(tx: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run_main(capsys, "transcript", "html",
                            str(tx / "gemini-session" / "session-2025-10-27T19-55-981c87cb.json"),
                            "-o", str(tmp_path / "view"))
    assert code == 0, err
    page = (tmp_path / "view" / "index.html").read_text()
    assert 'class="kbt"' in page and (tmp_path / "view" / "transcript.js").is_file()


# what a transcript command must not load: each costs tens of milliseconds of start-up (pydantic's import and
# model building about 60 ms; any stage's models would bring it) and none is needed to read a log
# (benchmarks/cli_startup.py measures the rest)
HEAVY = {"pydantic", "torch", "numpy", "aiohttp", "jinja2"}
IMPORTS_OF = """import sys
from kernelbench.cli import main
code = main(sys.argv[1:])
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("command", ["show --json", "show", "show --events", "convert", "html"])
def test_a_transcript_command_loads_only_what_it_uses(tmp_path: Path, command: str) -> None:
    path = tmp_path / "t.jsonl"
    with NormalizedWriter(path, harness="scripted", model="none") as log:
        call = log.tool_call("Bash", {"command": "ls"})
        log.tool_result(call, "ok", exit_code=0)
        log.usage(input=3, output=4)
    name, *flags = command.split()
    outputs = {"convert": ["-o", str(tmp_path / "out.jsonl")], "html": ["-o", str(tmp_path / "page")]}
    done = subprocess.run([sys.executable, "-c", IMPORTS_OF, "transcript", name, str(path), *flags,
                           *outputs.get(name, [])], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stderr.split())
    assert "kernelbench.transcripts.loader" in loaded     # the check sees the command's imports
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, heavy


def write_scripted_events(path: Path, *, output: str = "PASS", done: bool = True) -> Path:
    """A scripted agent's event stream, as `kernelbench/harness/scripted_program.py` writes it."""
    records = [{"type": "start", "plan": "eager", "cwd": "/tmp/ws"}, {"type": "user", "text": "write solution.py"},
               {"type": "assistant", "text": "Writing it."},
               {"type": "tool_call", "id": "call-1", "name": "Bash", "input": {"command": "python check.py"}},
               {"type": "tool_result", "id": "call-1", "output": output, "exit_code": 0, "is_error": False},
               {"type": "file_edit", "path": "solution.py", "before": "", "after": "x = 1\n"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records + ([{"type": "done"}] if done else [])))
    return path


def test_a_runs_scripted_events_are_recognised(tmp_path: Path, capsys) -> None:
    code, out, err = run_main(capsys, "transcript", "show", str(write_scripted_events(tmp_path / "events.jsonl")),
                              "--json")
    summary = json.loads(out)
    assert code == 0, err
    assert summary["format"] == "scripted-events" and summary["complete"] and summary["unknown_records_total"] == 0
    assert summary["tool_calls_by_name"] == {"Bash": 1}


@pytest.mark.parametrize("content", ["# not a transcript\n", "", '{"some": "json"}\n'])
def test_show_refuses_a_file_in_no_known_format(tmp_path: Path, capsys, content: str) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text(content)
    code, out, err = run_main(capsys, "transcript", "show", str(path))
    assert code == 2 and out == ""
    assert str(path) in err and "claude-stream" in err and "scripted-events" in err and err.count("\n") == 1


def test_show_events_prints_the_conversation(tmp_path: Path, capsys) -> None:
    code, out, err = run_main(capsys, "transcript", "show", str(write_scripted_events(tmp_path / "events.jsonl")),
                              "--events")
    assert code == 0, err
    for expected in ("user", "write solution.py", "assistant", "Writing it.", "Bash", "python check.py", "PASS",
                     "exit 0", "solution.py", "+x = 1"):
        assert expected in out, expected
    assert out.index("write solution.py") < out.index("python check.py") < out.index("PASS")


def test_show_events_escapes_terminal_control_characters(tmp_path: Path, capsys) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202eevil\x9b"
    path = write_scripted_events(tmp_path / "events.jsonl", output=hostile)
    code, out, _ = run_main(capsys, "transcript", "show", str(path), "--events")
    assert code == 0
    assert not any(c in out for c in "\x1b\x07\u202e\x9b")
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\u202eevil\\x9b" in out
