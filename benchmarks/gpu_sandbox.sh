#!/usr/bin/env bash
# The confinement checked on a lent GPU machine in one call, results under $OUT:
#   1. the machine's facts, the sandboxed GPU workloads and ncu inside the sandbox (gpu_sandbox.py)
#   2. the red-team census as root on this machine (redteam.py)
#   3. GRADE (default 04_kahan_softmax): the deck's Triton solutions graded on the GPU, sandboxed, counters on
#
#   carry: .whl .debs        command: bash benchmarks/gpu_sandbox.sh
cd "$(dirname "$0")/.."
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
python3 benchmarks/gpu_sandbox.py --out "$out" 2>&1 | grep -v USDT | tee "$out/gpu_sandbox.log"
python3 benchmarks/redteam.py --out "$out/redteam_gpu_machine.md" 2>&1 | tail -4
for problem in ${GRADE:-04_kahan_softmax}; do
  started=$(date +%s)
  KERNELBENCH_ISOLATION=bwrap timeout 400 python3 -m kernelbench grade "solutions/triton/$problem.py" \
    --problem "problems/$problem" --device cuda --json > "$out/grade_$problem.json" 2> "$out/grade_$problem.err"
  echo "grade $problem: exit $? in $(( $(date +%s) - started )) s"
  python3 - "$out/grade_$problem.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    print("  no report"); raise SystemExit
g = d["grading"]
print(" ", g["outcome"], "peak", g.get("peak_fraction"), "isolation", d["environment"].get("isolation"))
print("  reasons", g["reasons"][:3])
for f in d["integrity"]:
    print("  finding", f["severity"], f["check"], f["message"][:120], "|", (f.get("evidence") or "")[:200])
PY
  tail -3 "$out/grade_$problem.err"
done
