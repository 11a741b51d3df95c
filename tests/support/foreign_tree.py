"""A deck laid out as kernelbench.com lays theirs out, for tests: `<hard>/problems-toy/<problem>/` (the toy
KernelBench-Hard problems of tests/foreign/decks/kbh-toy) with a check.py and a benchmark.py written here that run
on the CPU, and their harness package `<hard>/src/eval/` two folders above, where those scripts import it from."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

DECK = Path(__file__).resolve().parents[1] / "foreign" / "decks" / "kbh-toy"

CHECK = textwrap.dedent('''\
    """A check.py as their problems ship one: their harness package from two folders up, then every shape."""
    import sys
    from pathlib import Path

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from src.eval.verdict import close  # noqa: E402

    import reference  # noqa: E402
    import shapes  # noqa: E402
    import solution  # noqa: E402

    for shape in shapes.SHAPES:
        for key, value in shape.items():
            setattr(reference, key, value)
        torch.manual_seed(42)
        ref = reference.Model(*reference.get_init_inputs())
        sol = solution.Model(*reference.get_init_inputs())
        sol.load_state_dict(ref.state_dict(), strict=True)
        x = reference.get_inputs()
        if not close(sol(*x), ref(*x)):
            print(f"FAIL: shape {shape} differs")
            sys.exit(1)
    print("PASS")
''')


BENCHMARK = textwrap.dedent('''\
    """A benchmark.py printing the lines their problems' benchmark.py prints, timed on the CPU."""
    import math
    import sys
    import time
    from pathlib import Path

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import reference  # noqa: E402
    import shapes  # noqa: E402
    import solution  # noqa: E402

    fractions = []
    for index, shape in enumerate(shapes.SHAPES):
        for key, value in shape.items():
            setattr(reference, key, value)
        torch.manual_seed(2026)
        sol = solution.Model(*reference.get_init_inputs())
        x = reference.get_inputs()
        began = time.perf_counter()
        sol(*x)
        ms = max((time.perf_counter() - began) * 1e3, 1e-3)
        print(f"shape={index} variant=solution tflops=0.001 gbps=0.010 ms={ms:.3f}", flush=True)
        print(f"shape={index} solution_peak_fraction=0.0100")
        fractions.append(0.01)
    print(f"peak_fraction: {math.exp(sum(map(math.log, fractions)) / len(fractions)):.4f}")
    print("RESULT: LOW")
''')


def lay_out_their_tree(hard: Path) -> Path:
    """The toy deck under `hard` in their layout; returns the deck folder (`hard/problems-toy`)."""
    deck = hard / "problems-toy"
    shutil.copytree(DECK, deck)
    for problem in deck.iterdir():
        (problem / "check.py").write_text(CHECK)
        (problem / "benchmark.py").write_text(BENCHMARK)
        (problem / "PROMPT.txt").write_text(f"Write a faster {problem.name} in solution.py; python check.py must "
                                            "print PASS.\n")
    (hard / "src" / "eval").mkdir(parents=True)
    (hard / "src" / "__init__.py").write_text("")
    (hard / "src" / "eval" / "__init__.py").write_text("")
    (hard / "src" / "eval" / "verdict.py").write_text(
        "import torch\n\ndef close(a, b):\n    return torch.allclose(a, b, atol=1e-4, rtol=1e-4)\n")
    return deck
