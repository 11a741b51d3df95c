"""`kernelbench` command line: a thin layer over the Python API.

Each stage folder that has commands holds a `cli.py` with `register(subparsers)`; they are discovered here so
that adding a stage never means editing this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import kernelbench
from kernelbench.errors import KernelBenchError

EXAMPLES = """examples:
  kernelbench transcript show runs/<run_id>/transcript.jsonl
  kernelbench grade solution.py --problem problems/01_fp8_gemm --device cpu --shapes smoke
  kernelbench run --agent claude:claude-opus-4-7@max --problem problems/04_kahan_softmax
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written, and every option's default after its help (unless the help already
    says it), so that `--help` never leaves a reader guessing what leaving an option out does."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS, [], "") or "default" in text:
            return action.help
        default = action.default
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})".lstrip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelbench", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"kernelbench {kernelbench.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(subparsers)
    for sub in all_parsers(parser):
        sub.formatter_class = HelpFormatter
    return parser


def all_parsers(parser: argparse.ArgumentParser):
    """The parser and every subcommand's parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from all_parsers(sub)


def _command_modules():
    for info in sorted(pkgutil.iter_modules(kernelbench.__path__), key=lambda m: m.name):
        if info.ispkg:
            try:
                module = importlib.import_module(f"kernelbench.{info.name}.cli")
            except ModuleNotFoundError as exc:
                if exc.name == f"kernelbench.{info.name}.cli":
                    continue
                raise
            yield module


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KernelBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
