#!/usr/bin/env bash
# The kernelbench.com H100 board regraded on a lent GPU machine, in calls that each fit the 10-minute command limit.
# Installs the carried wheels and bubblewrap package where they are missing; on the first call (no regraded run
# directory in RUNS yet) checks every problem of the foreign deck on this GPU first (`kernelbench problem check
# --device cuda`: each reference passes its own grading, a perturbed output fails) and grades nothing if one fails;
# then runs `kernelbench regrade --resume` until BUDGET seconds have gone (no new cell after that; HARD_STOP
# interrupts the cell in flight like Ctrl-C, which throws only that cell away) and packs every regraded run
# directory into $OUT/runs.tgz. Bring them home with `bash sweeps/unpack-runs.sh runs.tgz` (new cells only,
# harness errors left out) and call again: finished cells are skipped.
#
#   carry: .foreign .whl .debs        command: bash sweeps/device-regrade.sh
#   FOREIGN (default .foreign/kernelbench.com), RUNS (default runs), JOBS (gradings side by side, default 1),
#   BUDGET (seconds for the whole call, default 500), HARD_STOP, CHECK_DECK (1: check the deck first; default:
#   only when RUNS holds no regraded cell), ONLY (a run id or problem to grade alone), COUNTERS (on|off, default
#   on: the ncu pass; off where the machine has no ncu), OUT
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
started=$(date +%s)
foreign="${FOREIGN:-.foreign/kernelbench.com}" runs="${RUNS:-runs}" out="${OUT:-/tmp}"
board="$foreign/published-h100/leaderboard.json" deck="$foreign/benchmarks/hard/problems-h100"
solutions="$foreign/public/runs/h100"
for need in "$board" "$deck" "$solutions" "$foreign/SOURCE" "$foreign/COMMIT"; do
  [ -e "$need" ] || { echo "missing $need: carry .foreign (the fetched kernelbench.com files)" >&2; exit 2; }
done
if ! python3 -c "import pydantic, orjson" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! command -v bwrap >/dev/null && ls .debs/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .debs/bubblewrap_*.deb /tmp/bw && export PATH="/tmp/bw/usr/bin:$PATH"
fi
nvidia-smi -L 2>/dev/null || true
# a third of the solutions build CUDA C++ with load_inline: without nvcc or ninja they fail for the machine's sake
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || echo "warning: no nvcc here; load_inline solutions will fail to build"
python3 -c "import ninja" 2>/dev/null || command -v ninja >/dev/null || echo "warning: no ninja here (carry its wheel in .whl)"
command -v ncu >/dev/null || [ -x /usr/local/cuda/bin/ncu ] || echo "warning: no ncu here; pass COUNTERS=off"
mkdir -p "$runs"
pack() {
  # every regraded cell, whole: run directories are published by a rename, so none is half-written
  (cd "$(dirname "$runs")" && tar czf "$out/runs.tgz" --files-from <(cd "$(dirname "$runs")" &&
    find "$(basename "$runs")" -mindepth 1 -maxdepth 1 -type d -name '*_regraded' | sort))
  echo "$(find "$runs" -mindepth 1 -maxdepth 1 -type d -name '*_regraded' | wc -l) regraded cells in $out/runs.tgz"
}
trap pack EXIT

first_call=$(find "$runs" -mindepth 1 -maxdepth 1 -type d -name '*_regraded' | head -1)
if [ "${CHECK_DECK:-$([ -z "$first_call" ] && echo 1 || echo 0)}" = 1 ]; then
  echo "== problem check of the foreign deck on this GPU"
  if ! timeout --signal=INT --kill-after=20 "${CHECK_LIMIT:-300}" \
      python3 -m kernelbench problem check "$deck"/*/ --device cuda 2>&1 | tee "$out/deck-check.log"; then
    echo "the foreign deck does not pass its own check on this GPU: nothing graded (see deck-check.log)" >&2
    exit 4
  fi
fi

budget="${BUDGET:-500}"
left=$(( budget - ($(date +%s) - started) ))
[ "$left" -gt 60 ] || { echo "no time left in this call for a grading"; exit 3; }
stop_after=$(( left - 90 > 30 ? left - 90 : 30 ))  # the last cell started has ~90 s (more for load_inline)
only=()
[ -n "${ONLY:-}" ] && only=(--only "$ONLY")
status=0
echo "== regrade: $left s left in this call, no new cell after $stop_after s"
timeout --signal=INT --kill-after=20 "${HARD_STOP:-$left}" \
  python3 -m kernelbench regrade "$board" --solutions "$solutions" --deck "$deck" --runs "$runs" \
    --resume --jobs "${JOBS:-1}" --stop-after "$stop_after" --counters "${COUNTERS:-on}" "${only[@]}" \
  2>&1 | tee "$out/regrade.log" || status=$?
exit $status
