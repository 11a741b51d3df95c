#!/usr/bin/env bash
# The sanitizer stage on a lent GPU machine in one call (about 9 minutes), results under $OUT:
#   1. compute-sanitizer's version and a bare memcheck run (is the tool there and does it start here?)
#   2. the planted out-of-bounds read and shared-memory race, and the deck's honest Triton and eager solutions,
#      graded with the stage on, sandboxed (gpu_sanitizer.py: findings, verdicts, seconds per tool)
#
#   carry: .whl .debs        command: bash benchmarks/gpu_sanitizer.sh
cd "$(dirname "$0")/.."
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
tool="${KERNELBENCH_COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}"
{ "$tool" --version; "$tool" --tool memcheck --error-exitcode 86 --print-limit 50 --report-api-errors no \
    python3 -c "import torch; torch.ones(4, device='cuda').sum().item()"; echo "bare memcheck: exit $?"; } \
  2>&1 | tee "$out/sanitizer_tool.txt"
KERNELBENCH_ISOLATION=bwrap python3 benchmarks/gpu_sanitizer.py --out "$out" --budget-s "${BUDGET_S:-480}" 2>&1 \
  | grep -v USDT | tee "$out/gpu_sanitizer.log"
