#!/usr/bin/env bash
# Verdicts from evidence, checked on a lent multi-GPU machine in one call: GPU 0 grades the red-team suite, the
# accepted routes and the deck's honest solutions (benchmarks/integrity_gpu.py); the other GPUs regrade published
# cells of the kernelbench.com H100 board, one `kernelbench regrade --gpus` over all of them (a GPU that finishes a
# cell takes the next one of CELLS, then of MORE, while the call's time lasts). Everything comes back packed under
# $OUT: integrity.tgz (the suite's table and reports) and runs.tgz (the run directories finished in this call;
# bring them home with `bash sweeps/unpack-runs.sh runs.tgz`).
#
#   carry: .foreign .whl .debs        command: CELLS=cells.txt bash sweeps/device-verdicts.sh
#   CELLS (a file of published run ids, one per line), MORE (another, graded after them), BUDGET (seconds for the
#   whole call, default 540), SUITE_BUDGET (seconds for the suite on GPU 0, default BUDGET - 60), JOBS (gradings
#   side by side on each regrading GPU, default 2), SUITE (0: no suite, every GPU regrades), OUT,
#   SUITE=first (GPU 0 runs GPU0_FIRST and no suite, e.g. another device check beside the regrade),
#   SUITE_ARGS (more arguments for the suite, e.g. "--only 09_host_work.py --honest"),
#   TIMERS (a file of published run ids: before regrading, each regrading GPU times its share of them with
#   benchmarks/gpu_cell_timers.py for up to TIMERS_BUDGET seconds, default 300; figures in timers.tgz, one
#   timers-gpuN.json per GPU),
#   OWN_CHECKER (1: each cell also gets kernelbench.com's own check.py run over it, confined, in a pass of its own
#   before and after the gradings: the cells of CELLS and MORE already graded in runs/ are copied in first and get
#   their checker's verdict, which `sweeps/unpack-runs.sh` brings home into their result.json, and are not graded
#   again, so leave it off for a call that regrades superseded cells such as kbh-h100-next-rest.txt; the carried
#   .foreign copy then needs their harness package, benchmarks/hard/src, beside the deck),
#   OWN_BENCHMARK (1: after the gradings and checkers, kernelbench.com's own benchmark.py times each cell that passed
#   our checks, alone on its GPU, the cells graded earlier copied in as for OWN_CHECKER: their timer and protocol on
#   this GPU, which splits a peak gap into the machine's part and the grader's),
#   FRESH (a file of published run ids that OWN_CHECKER and OWN_BENCHMARK do not copy in: graded again, e.g. cells graded before
#   the grader's last change; their old run directories are to be removed at home before unpacking),
#   GPU0_FIRST (a command run alone on GPU 0 before the suite, e.g. a baseline measured again: its time is the
#   suite's; output in gpu0-first.log)
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source benchmarks/device_env.sh
out="${OUT:-/tmp/out}" budget="${BUDGET:-540}" jobs="${JOBS:-2}"
mkdir -p "$out"
foreign=.foreign/kernelbench.com
board="$foreign/published-h100/leaderboard.json" deck="$foreign/benchmarks/hard/problems-h100"
solutions="$foreign/public/runs/h100"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi -L
first_regrade_gpu=1
[ "${SUITE:-1}" = 0 ] && first_regrade_gpu=0
[ "$gpus" -gt "$first_regrade_gpu" ] || { echo "no GPU left for the regrade" >&2; }

pids=()
if [ "${SUITE:-1}" != 0 ]; then
  suite_budget="${SUITE_BUDGET:-$((budget - 60))}"
  (
  if [ -n "${GPU0_FIRST:-}" ]; then
    first_started=$(date +%s)
    CUDA_VISIBLE_DEVICES=0 bash -c "$GPU0_FIRST" > "$out/gpu0-first.log" 2>&1
    suite_budget=$(( suite_budget - ($(date +%s) - first_started) ))
  fi
  [ "${SUITE:-1}" = first ] && exit 0  # GPU 0 runs GPU0_FIRST alone
  CUDA_VISIBLE_DEVICES=0 python3 benchmarks/integrity_gpu.py --out "$out/integrity" --budget-s "$suite_budget" \
    --parallel 8 ${SUITE_ARGS:-} > "$out/integrity.log" 2>&1
  ) &
  pids+=($!)
fi

deal() {  # the cells of file $1 for timer process $2 of $3
  [ -f "$1" ] || return 0
  grep -v '^\s*$' "$1" | awk -v k="$2" -v n="$3" '(NR - 1) % n == k'
}
n=$((gpus - first_regrade_gpu))
regrade_gpus=$(seq -s, "$first_regrade_gpu" "$((gpus - 1))")
if [ -n "${OWN_CHECKER:-}${OWN_BENCHMARK:-}" ]; then  # cells graded earlier: --resume skips their grading only
  mkdir -p runs-regraded
  for dir in runs/*_regraded; do
    id=${dir#runs/}
    [ -n "${FRESH:-}" ] && grep -qxF "${id%_regraded}" "$FRESH" && continue  # graded again in this call
    [ -e "runs-regraded/$id" ] || cp -rp "$dir" runs-regraded/
  done
fi
touch /tmp/regrade-call-started  # only cells finished in this call go back (a warm machine keeps runs-regraded/)
(
  if [ -n "${TIMERS:-}" ]; then  # one timing process per GPU, before the regrade uses them
    timers=()
    for ((g = first_regrade_gpu; g < gpus; g++)); do
      deal "$TIMERS" "$((g - first_regrade_gpu))" "$n" > "/tmp/timers-gpu$g.txt"
      ( CUDA_VISIBLE_DEVICES=$g python3 benchmarks/gpu_cell_timers.py --cells "/tmp/timers-gpu$g.txt" \
          --out "/tmp/timers-gpu$g" --budget-s "${TIMERS_BUDGET:-300}"
        cp "/tmp/timers-gpu$g/cell_timers.json" "$out/timers-gpu$g.json" 2>/dev/null ) &
      timers+=($!)
    done
    for pid in "${timers[@]}"; do wait "$pid"; done
  fi
  for list in "${CELLS:-}" "${MORE:-}"; do  # one regrade over all regrading GPUs: a free GPU takes the next cell
    [ -n "$list" ] && [ -f "$list" ] || continue
    only=()
    while read -r id; do only+=(--only "$id"); done < <(grep -v '^\s*$' "$list")
    [ "${#only[@]}" -gt 0 ] || continue
    left=$(( budget - ($(date +%s) - started) ))
    [ "$left" -gt 90 ] || break
    stop_after=$(( left - 120 > 20 ? left - 120 : 20 ))
    timeout --signal=INT --kill-after=30 "$((left - 10))" \
      python3 -m kernelbench regrade "$board" --solutions "$solutions" --deck "$deck" --runs runs-regraded \
        --gpus "$regrade_gpus" --resume --jobs "$jobs" --stop-after "$stop_after" \
        ${OWN_CHECKER:+--own-checker} ${OWN_BENCHMARK:+--own-benchmark} "${only[@]}"
  done
) > "$out/regrade.log" 2>&1 &
pids+=($!)
for pid in "${pids[@]}"; do wait "$pid"; done

new_cells=$(find runs-regraded -mindepth 2 -maxdepth 2 -name result.json -newer /tmp/regrade-call-started \
  2>/dev/null | xargs -r -n1 dirname)
[ -n "$new_cells" ] && tar czf "$out/runs.tgz" --transform 's,^runs-regraded,runs,' $new_cells
[ -d "$out/integrity" ] && tar czf "$out/integrity.tgz" -C "$out" integrity && rm -rf "$out/integrity"
ls "$out"/timers-gpu*.json >/dev/null 2>&1 && tar czf "$out/timers.tgz" -C "$out" $(cd "$out" && ls timers-gpu*.json) \
  && rm -f "$out"/timers-gpu*.json  # one file back for all GPUs: a call brings back at most 8
echo "$(echo "$new_cells" | grep -c _regraded) regraded cells; $(( $(date +%s) - started )) s"
