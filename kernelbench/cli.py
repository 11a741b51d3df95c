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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelbench", description=__doc__.splitlines()[0], epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kernelbench {kernelbench.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(subparsers)
    return parser


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
