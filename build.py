#!/usr/bin/env python3
"""Build the KernelBench Hard site: `python build.py --help`."""

from kernelbench.sitegen.main import command

if __name__ == "__main__":
    command()
