#!/usr/bin/env bash
# Bring the runs of a device call home: unpack runs.tgz (written by sweeps/device-demo.sh) and copy into RUNS only
# the run directories it does not hold yet, leaving out harness errors (an interrupted grading: the next
# `--resume` redoes it). Existing run directories are never touched.
#
#   bash sweeps/unpack-runs.sh /path/to/runs.tgz [RUNS]        (RUNS defaults to runs)
set -euo pipefail
tgz="${1:?usage: sweeps/unpack-runs.sh RUNS.TGZ [RUNS]}" runs="${2:-runs}"
[ -f "$tgz" ] || { echo "no such file: $tgz" >&2; exit 2; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tar xzf "$tgz" -C "$scratch"
mkdir -p "$runs"
added=0 skipped=0
for dir in "$scratch"/*/*/; do
  name="$(basename "$dir")"
  [ -f "$dir/result.json" ] || continue
  [ -e "$runs/$name" ] && continue
  if grep -q '"outcome": "harness_error"' "$dir/result.json"; then
    echo "left out (harness error, redone by --resume): $name"; skipped=$((skipped + 1)); continue
  fi
  # copied under a hidden name first, so an interrupted copy never looks like a run
  cp -r "$dir" "$runs/.$name.partial" && mv "$runs/.$name.partial" "$runs/$name"
  echo "added: $name"; added=$((added + 1))
done
echo "$added run directories added to $runs, $skipped harness errors left out"
