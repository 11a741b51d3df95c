#!/usr/bin/env python3
"""Build the KernelBench Hard site: `python build.py --help`."""

import sys

from kernelbench.sitegen.main import main

if __name__ == "__main__":
    sys.exit(main())
