import sys

from kernelbench.cli import main

sys.exit(main())
