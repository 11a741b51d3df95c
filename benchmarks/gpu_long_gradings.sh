#!/usr/bin/env bash
# Gradings longer than one device command (ten minutes): eager 06 and eager 08 on full shapes take longer than that
# (benchmarks/results/h100_1207d.md). The first call starts them in a process session of their own (setsid), which
# the device keeps running after the command returns for as long as the machine is held; the second call, made at
# once (a machine idle for 30 s is given back), waits for them and brings their logs and reports back.
#
#   carry: .whl .debs
#   call 1:  bash benchmarks/gpu_long_gradings.sh start 560 \
#              "solutions/eager/06_sonic_moe_swiglu.py problems/06_sonic_moe_swiglu --sanitizer on" \
#              "solutions/eager/08_gqa_prefill_attention.py problems/08_gqa_prefill_attention"
#   call 2:  bash benchmarks/gpu_long_gradings.sh collect 560
#
# Each quoted job is "SOLUTION PROBLEM_DIR [grade_one.py options]"; each writes /tmp/kblong/jobN.{json,stages.log}.
# Both modes end by writing $OUT/long.tgz (whatever exists so far), so the first call already brings back where each
# grading had got to. `start` waits up to SECONDS while the gradings run; `collect` waits up to SECONDS for them
# to end.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?start or collect}; wait_s=${2:?seconds}; shift 2
dir=/tmp/kblong
pack() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.used --format=csv > "$dir/gpu.txt" 2>&1
  git log -1 --format=%H >> "$dir/gpu.txt" 2>/dev/null
  tar czf "${OUT:-/tmp}/long.tgz" -C /tmp kblong
}
running() { pgrep -f "benchmarks/grade_one.py" > /dev/null; }
wait_up_to() {
  local until=$(( $(date +%s) + $1 ))
  while running && [ "$(date +%s)" -lt "$until" ]; do sleep 5; done
}
if [ "$mode" = start ]; then
  source benchmarks/device_env.sh
  export KERNELBENCH_ISOLATION=bwrap
  mkdir -p "$dir"
  k=0
  for job in "$@"; do
    # shellcheck disable=SC2086  # the job's words are its arguments
    setsid python3 benchmarks/grade_one.py ${job%% *} $(echo "$job" | cut -d' ' -f2) "$dir/job$k" \
      $(echo "$job" | cut -d' ' -f3-) > "$dir/job$k.out" 2>&1 < /dev/null &
    echo "job$k: $job" >> "$dir/jobs.txt"
    k=$(( k + 1 ))
  done
  wait_up_to "$wait_s"
elif [ "$mode" = collect ]; then
  wait_up_to "$wait_s"
  running && echo "still running after $wait_s s" >> "$dir/jobs.txt"
else
  echo "mode: start or collect" >&2; exit 2
fi
pack
