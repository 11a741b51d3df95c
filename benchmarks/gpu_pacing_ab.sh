#!/usr/bin/env bash
# Does the grader's pacer move the medians? The same Triton solutions graded by the grader before the pacer
# (a copy of its package in .ab, from `git archive d0a2cc3 kernelbench | tar -x -C .ab`) and by this one, on the
# same GPUs with the two swapped between rounds; GPU 0 grades the red-team attacks on the GPU meanwhile.
#   carry: .whl .debs .ab        command: bash benchmarks/gpu_pacing_ab.sh
cd "$(dirname "$0")/.."
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
grade() {  # gpu, which (before|now), problem, round
  local path="$PYTHONPATH"
  [ "$2" = before ] && path="$PWD/.ab:$PYTHONPATH"
  PYTHONPATH="$path" CUDA_VISIBLE_DEVICES=$1 KERNELBENCH_ISOLATION=bwrap timeout 300 python3 -m kernelbench grade \
    "solutions/triton/$3.py" --problem "problems/$3" --device cuda --counters off --json \
    > "$out/ab_$3_$2_r$4.json" 2> /dev/null
  python3 - "$out/ab_$3_$2_r$4.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["grading"]
print(sys.argv[1].split("/")[-1], "GPU", sys.argv[2], g["outcome"], "peak", round(g["peak_fraction"] or 0, 4),
      "medians", [round(s["median_ms"], 4) if s["median_ms"] else None for s in g["shapes"]])
PY
}
( CUDA_VISIBLE_DEVICES=0 timeout 500 python3 benchmarks/redteam_gradings.py --device cuda \
    --out "$out/redteam_gradings_cuda.md" 2>&1 | grep -v "USDT\|Toggling" ) > "$out/redteam.log" 2>&1 &
for round in 1 2; do
  if [ $round = 1 ]; then a=before b=now; else a=now b=before; fi
  grade 1 $a 07_w4a16_gemm $round & grade 2 $b 07_w4a16_gemm $round & grade 3 $a 01_fp8_gemm $round & wait
  grade 3 $b 01_fp8_gemm $round
done
wait
cat "$out/redteam.log"
