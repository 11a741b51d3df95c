#!/usr/bin/env bash
# The sanitizer stage on a lent GPU machine in one call (about 9 minutes), results under $OUT:
#   1. compute-sanitizer's version and a bare memcheck run (is the tool there and does it start here?)
#   2. the planted out-of-bounds read and shared-memory race, and the deck's honest Triton and eager solutions,
#      graded with the stage on, sandboxed (gpu_sanitizer.py: findings, verdicts, seconds per tool), one process
#      per GPU, each grading its part of the list (--part g/N) one at a time within BUDGET_S (default 480 s),
#      then the parts merged into sanitizer.json and sanitizer.md (--merge); the parts' own folders, logs
#      included, go into sanitizer_parts.tgz. Arguments are passed to every part (e.g. --only eager/04).
#
#   carry: .whl .debs        command: bash benchmarks/gpu_sanitizer.sh
cd "$(dirname "$0")/.."
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
tool="${KERNELBENCH_COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}"
{ "$tool" --version; "$tool" --tool memcheck --error-exitcode 86 --print-limit 50 --report-api-errors no \
    python3 -c "import torch; torch.ones(4, device='cuda').sum().item()"; echo "bare memcheck: exit $?"; } \
  2>&1 | tee "$out/sanitizer_tool.txt"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 1 ]; then echo "nvidia-smi lists no GPU: one part, on whatever CUDA sees"; gpus=1; fi
parts=()
for g in $(seq 0 $(( gpus - 1 ))); do
  mkdir -p "$out/gpu$g"
  parts+=("gpu$g")
  CUDA_VISIBLE_DEVICES=$g KERNELBENCH_ISOLATION=bwrap python3 benchmarks/gpu_sanitizer.py --out "$out/gpu$g" \
    --part "$g/$gpus" --budget-s "${BUDGET_S:-480}" "$@" 2>&1 | grep -v USDT > "$out/gpu$g/gpu_sanitizer.log" &
done
wait
{ for p in "${parts[@]}"; do grep -E '^(planted|honest):' "$out/$p/gpu_sanitizer.log" | sed "s/^/[$p] /"; done
  python3 benchmarks/gpu_sanitizer.py --out "$out" --merge "${parts[@]/#/$out/}"; } 2>&1 | tee "$out/gpu_sanitizer.log"
status=${PIPESTATUS[0]}
# a device call brings back few files: the parts' folders travel as one archive
tar czf "$out/sanitizer_parts.tgz" -C "$out" "${parts[@]}" && rm -rf "${parts[@]/#/$out/}"
exit "$status"
