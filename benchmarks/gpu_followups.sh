#!/usr/bin/env bash
# The GPU checks still open, in one device call (about 8 minutes), results under $OUT:
#   1. row-sum deviations of each softmax accumulation on 04's absorb rows (the Kahan gap, writeup h100-scripted-baselines)
#   2. 01_fp8_gemm's Triton solution graded under the new row_rtol tolerance (must pass; it failed the old one)
#   3. 02_kda's eager and fla lines, with the time they need (twice killed at a 56 / 140 s bench limit)
#   4. 01's SOTA line again (its 4096³ time predates the launch cover and looked inflated)
#
#   carry: .whl        command: bash benchmarks/gpu_followups.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}"
if ! python3 -c "import pydantic, orjson" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
timeout 110 python3 benchmarks/gpu_kahan_row_sums.py 2>&1 | grep -v USDT | tee "$out/kahan_row_sums.txt"
python3 benchmarks/gpu_validate.py --out "$out" --phases grade --problems 01_fp8_gemm --budget-s 120 2>&1 \
  | grep -v USDT | tee "$out/grade_01.txt" | grep -v "^ "
mkdir -p "$out/b02" "$out/b01"
python3 benchmarks/gpu_validate.py --out "$out/b02" --phases baselines --problems 02_kda --budget-s 250 --shape-seconds 10 2>&1 \
  | grep -v USDT | tee "$out/baselines_02.txt" | tail -3
python3 benchmarks/gpu_validate.py --out "$out/b01" --phases baselines --problems 01_fp8_gemm --budget-s 70 2>&1 \
  | grep -v USDT | tee "$out/baselines_01.txt" | tail -3
