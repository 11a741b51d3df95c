#!/usr/bin/env bash
# The confined grader on a lent machine of several GPUs, one process per GPU, results under $OUT:
#   GPU 0: the grading-level red-team attacks (redteam_gradings.py --device cuda), then EAGER (default 04 05)
#   GPUs 1..n-1: the deck's Triton solutions (TRITON, default all nine) graded sandboxed with counters on, split
#   over the GPUs; each report's outcome, peak fraction, the grader's clock per shape and any error finding
#
#   carry: .whl .debs        command: bash benchmarks/gpu_confinement.sh
cd "$(dirname "$0")/.."
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi -L
grade() {  # gpu, line, problem
  local started=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 KERNELBENCH_ISOLATION=bwrap timeout 420 python3 -m kernelbench grade \
    "solutions/$2/$3.py" --problem "problems/$3" --device cuda --json > "$out/$2_$3.json" 2> "$out/$2_$3.err"
  echo "$2 $3 on GPU $1: exit $? in $(( $(date +%s) - started )) s"
}
(
  CUDA_VISIBLE_DEVICES=0 timeout 400 python3 benchmarks/redteam_gradings.py --device cuda \
    --out "$out/redteam_gradings_cuda.md" 2>&1 | grep -v "USDT\|Toggling"
  for p in ${EAGER:-04_kahan_softmax 05_topk_bitonic}; do grade 0 eager "$p"; done
) > "$out/gpu0.log" 2>&1 &
problems=(${TRITON:-01_fp8_gemm 02_kda 03_paged_attention 04_kahan_softmax 05_topk_bitonic 06_sonic_moe_swiglu 07_w4a16_gemm 08_gqa_prefill_attention 09_add_rmsnorm_fp8_quant})
workers=$(( gpus > 1 ? gpus - 1 : 1 ))
for w in $(seq 0 $(( workers - 1 ))); do
  gpu=$(( gpus > 1 ? w + 1 : 0 ))
  ( for i in "${!problems[@]}"; do
      [ $(( i % workers )) -eq "$w" ] && grade "$gpu" triton "${problems[$i]}"
    done ) > "$out/gpu$gpu.log" 2>&1 &
done
wait
cat "$out"/gpu*.log
python3 - "$out" <<'PY'
import json, pathlib, sys
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*_*.json")):
    try:
        d = json.loads(path.read_text())
    except ValueError:
        print(f"{path.stem}: no report"); continue
    g = d["grading"]
    clock = [l for l in d.get("benchmark_log", "").splitlines() if "grader's clock" in l]
    errors = [f"{f['check']}: {f['message'][:100]}" for f in d["integrity"] if f["severity"] == "error"]
    print(f"{path.stem}: {g['outcome']} peak {g.get('peak_fraction')} isolation {d['environment'].get('isolation')} "
          f"in {g['elapsed_s']:.0f} s; errors {errors}; reasons {g['reasons'][:2]}")
    for line in clock:
        print("   ", line)
PY
