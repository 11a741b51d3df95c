#!/usr/bin/env bash
# The demo sweep on a lent GPU machine (no bubblewrap, no pydantic/orjson, nothing fetchable there):
# unpacks the carried bubblewrap package and wheels, runs what is left of sweeps/demo-h100.yaml for at most
# STOP_AFTER seconds (default 420, inside the 10-minute command limit), and packs runs/ into $OUT/runs.tgz.
# Call it again (after unpacking runs.tgz into the checkout) to carry on: finished runs are skipped.
#
#   carry: .whl .debs        command: bash sweeps/device-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD"
if ! command -v bwrap >/dev/null; then
  dpkg -x .debs/bubblewrap_*.deb /tmp/bw && export PATH="/tmp/bw/usr/bin:$PATH"
fi
sandbox=()
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid true 2>/dev/null; then
  echo "bubblewrap cannot create namespaces here: running unsandboxed (recorded in every result.json)"
  sandbox=(--no-sandbox)
fi
nvidia-smi -L
status=0
python3 -m kernelbench sweep sweeps/demo-h100.yaml --resume --stop-after "${STOP_AFTER:-420}" "${sandbox[@]}" \
  2>&1 | tee "${OUT:-/tmp}/sweep.log" || status=$?
tar czf "${OUT:-/tmp}/runs.tgz" runs
ls runs | wc -l
exit $status
