#!/usr/bin/env bash
# The sanitizer stage on a lent GPU machine in one call (about 9 minutes), results under $OUT:
#   1. compute-sanitizer's version and a bare memcheck run (is the tool there and does it start here?)
#   2. the planted out-of-bounds read and shared-memory race, and the deck's honest Triton and eager solutions,
#      graded with the stage on, sandboxed (gpu_sanitizer.py: findings, verdicts, seconds per tool), one process
#      per GPU (PARTS_PER_GPU of them per GPU where the list is long for the machine: the tools' seconds are then
#      measured on a shared GPU, which the report says), each grading its part of the list (--part k/N) one at a
#      time within BUDGET_S (default 480 s),
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
per_gpu=${PARTS_PER_GPU:-1}
nparts=$(( gpus * per_gpu ))
echo "parts: $nparts on $gpus GPU(s), $per_gpu per GPU (tool seconds are measured on a GPU shared by $per_gpu)" \
  | tee -a "$out/sanitizer_tool.txt"
parts=()
for k in $(seq 0 $(( nparts - 1 ))); do
  g=$(( k % gpus ))
  mkdir -p "$out/part$k"
  parts+=("part$k")
  CUDA_VISIBLE_DEVICES=$g KERNELBENCH_ISOLATION=bwrap python3 benchmarks/gpu_sanitizer.py --out "$out/part$k" \
    --part "$k/$nparts" --budget-s "${BUDGET_S:-480}" "$@" 2>&1 | grep -v USDT > "$out/part$k/gpu_sanitizer.log" &
done
wait
{ for p in "${parts[@]}"; do grep -E '^(planted|honest):' "$out/$p/gpu_sanitizer.log" | sed "s/^/[$p] /"; done
  python3 benchmarks/gpu_sanitizer.py --out "$out" --merge "${parts[@]/#/$out/}"; } 2>&1 | tee "$out/gpu_sanitizer.log"
status=${PIPESTATUS[0]}
# a device call brings back few files: the parts' folders travel as one archive
tar czf "$out/sanitizer_parts.tgz" -C "$out" "${parts[@]}" && rm -rf "${parts[@]/#/$out/}"
exit "$status"
