#!/usr/bin/env bash
# The demo sweep on a lent GPU machine (no bubblewrap, no pydantic/orjson, nothing fetchable there):
# installs the carried wheels and bubblewrap package where they are missing, runs what is left of the sweep
# for at most STOP_AFTER seconds (default 420, inside the 10-minute command limit), and packs the runs folder
# into $OUT/runs.tgz. Bring them home with `bash sweeps/unpack-runs.sh runs.tgz` (new runs only, harness errors
# left out), then call it again to carry on: finished runs are skipped.
#
#   carry: .whl .debs        command: bash sweeps/device-demo.sh
#   SWEEP (default sweeps/demo-h100.yaml), RUNS (default runs), STOP_AFTER, HARD_STOP, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
sweep="${SWEEP:-sweeps/demo-h100.yaml}" runs="${RUNS:-runs}" out="${OUT:-/tmp}"
if ! python3 -c "import pydantic, orjson" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! command -v bwrap >/dev/null; then
  dpkg -x .debs/bubblewrap_*.deb /tmp/bw && export PATH="/tmp/bw/usr/bin:$PATH"
fi
sandbox=()
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid true 2>/dev/null; then
  echo "bubblewrap cannot create namespaces here: running unsandboxed (recorded in every result.json)"
  sandbox=(--no-sandbox)
fi
nvidia-smi -L 2>/dev/null || true
status=0
# --stop-after starts nothing new after that long; HARD_STOP then interrupts the run in flight like Ctrl-C (it is
# removed, finished runs stay), so the runs are packed before the machine's own command limit kills everything
stop_after="${STOP_AFTER:-420}"
timeout --signal=INT --kill-after=20 "${HARD_STOP:-$((stop_after + 120))}" \
  python3 -m kernelbench sweep "$sweep" --resume --stop-after "$stop_after" "${sandbox[@]}" \
  2>&1 | tee "$out/sweep.log" || status=$?
tar czf "$out/runs.tgz" "$runs"
echo "$(ls "$runs" | wc -l) run directories in $runs"
exit $status
