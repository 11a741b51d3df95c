#!/usr/bin/env bash
# Bring the runs of a device call home: unpack runs.tgz (written by sweeps/device-demo.sh) and copy into RUNS only
# the run directories it does not hold yet, leaving out harness errors (an interrupted grading: the next
# `--resume` redoes it). An existing run directory is left as it is, with one exception: where the call added the
# published benchmark's own checker's verdict (`regrade --own-checker`) or its own timing (`--own-benchmark`) to a
# cell that had none, and nothing else in its result.json differs as the result model reads both, that result.json
# is replaced (whole, by a rename).
#
#   bash sweeps/unpack-runs.sh /path/to/runs.tgz [RUNS]        (RUNS defaults to runs)
set -euo pipefail
tgz="${1:?usage: sweeps/unpack-runs.sh RUNS.TGZ [RUNS]}" runs="${2:-runs}"
[ -f "$tgz" ] || { echo "no such file: $tgz" >&2; exit 2; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tar xzf "$tgz" -C "$scratch"
mkdir -p "$runs"
added=0 skipped=0 checked=0
for dir in "$scratch"/*/*/; do
  name="$(basename "$dir")"
  [ -f "$dir/result.json" ] || continue
  if [ -e "$runs/$name" ]; then
    if python3 - "$runs/$name/result.json" "$dir/result.json" <<'PY'
import json, sys
from kernelbench.results.run import RunResult, upgrade_result
# compared as the result model reads them, so a field a newer grader writes as null is not a difference
home, came = (RunResult.model_validate(upgrade_result(json.load(open(path)))) for path in sys.argv[1:3])
# their own scripts' results, the only fields a call may add to a cell graded earlier
ADDED = ("own_checker", "own_benchmark")
if came.provenance is None or home.provenance is None:
    sys.exit(1)
new = [f for f in ADDED if getattr(came.provenance, f) is not None and getattr(home.provenance, f) is None]
if not new:
    sys.exit(1)
came_without = came.model_copy(update={"provenance": came.provenance.model_copy(update={f: None for f in new})})
home_without = home.model_copy(update={"provenance": home.provenance.model_copy(update={f: None for f in new})})
sys.exit(0 if came_without.model_dump() == home_without.model_dump() else 1)
PY
    then
      cp "$dir/result.json" "$runs/$name/.result.json.partial" && mv "$runs/$name/.result.json.partial" "$runs/$name/result.json"
      echo "their own script's result added: $name"; checked=$((checked + 1))
    fi
    continue
  fi
  if grep -q '"outcome": "harness_error"' "$dir/result.json"; then
    echo "left out (harness error, redone by --resume): $name"; skipped=$((skipped + 1)); continue
  fi
  # copied under a hidden name first, so an interrupted copy never looks like a run
  cp -r "$dir" "$runs/.$name.partial" && mv "$runs/.$name.partial" "$runs/$name"
  echo "added: $name"; added=$((added + 1))
done
echo "$added run directories added to $runs, $skipped harness errors left out, $checked given their own scripts' results"
