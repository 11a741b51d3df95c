"""`python -m kernelbench.eval.worker`: one stage of a grading (kernelbench.eval.worker.entry)."""

import sys

from kernelbench.eval.worker.entry import main

sys.exit(main())
