"""How often a fresh process's first multithreaded torch.exp on the CPU returns low-accuracy values, with and
without the workers' math-library warm-up (`guards.warm_math_library`, pytorch/pytorch#188792).

Each trial is a fresh Python process (the fault lives in the first call of a process): it draws the smoke-size
softmax input (4 x 4096 float32, split over torch's threads), calls torch.exp twice and compares the two results
bitwise; the same for float64. A corrupted first call differs from the second by ~1e-4 relative (float32).

    python benchmarks/eval_vml_first_call.py --trials 200

Each mode's trials alternate with the other's, so a busy spell on the machine affects both alike.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from rich.progress import Progress

REPO = Path(__file__).resolve().parents[1]

TRIAL = """
import sys, torch
sys.path.insert(0, {repo!r})
if {warm}:
    from kernelbench.eval.portable import guards
    guards.warm_math_library()
x = torch.randn(4, 4096, generator=torch.Generator().manual_seed(1)) * 3.0 - 10.0
for dtype in (torch.float32, torch.float64):
    first, second = torch.exp(x.to(dtype)), torch.exp(x.to(dtype))
    rel = ((first.double() / second.double()) - 1).abs().max().item()
    print(str(dtype)[6:], "same" if torch.equal(first, second) else f"differs {{rel:.2e}}")
"""


def trial(warm: bool) -> list[str]:
    code = TRIAL.format(repo=str(REPO), warm=warm)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.split("\n")[:2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200, help="fresh processes per mode (default 200)")
    args = parser.parse_args()
    bad = {(mode, dtype): [] for mode in ("cold", "warmed") for dtype in ("float32", "float64")}
    with Progress() as progress:
        task = progress.add_task("fresh processes", total=2 * args.trials)
        for _ in range(args.trials):
            for mode in ("cold", "warmed"):
                for line in trial(mode == "warmed"):
                    dtype, verdict = line.split(" ", 1)
                    if verdict != "same":
                        bad[(mode, dtype)].append(verdict.split()[1])
                progress.advance(task)
    print(f"first torch.exp call differing from the second, out of {args.trials} fresh processes per mode")
    print(f"{'mode':<8} {'dtype':<8} {'differing':>10}  largest relative difference")
    for (mode, dtype), rels in bad.items():
        worst = max(rels, key=float) if rels else "-"
        print(f"{mode:<8} {dtype:<8} {len(rels):>10}  {worst}")


if __name__ == "__main__":
    main()
