#!/usr/bin/env bash
# Builds, on this machine (with access to a package registry), the three folders a lent GPU machine needs carried
# for grading, none of which is committed (.gitignore names them):
#   .whl      the grader's Python packages the GPU image lacks, as wheels for its Python (3.12, manylinux x86_64),
#             and nvidia-cutlass 4.2 for the CUTLASS headers some published solutions include
#   .debs     Debian's bubblewrap, util-linux (setpriv) and libseccomp2 with the libraries they need
#   .foreign  kernelbench.com's published H100 board, solutions, deck and harness package, laid out as
#             `kernelbench regrade` reads them (published-h100/leaderboard.json, SOURCE and COMMIT at its root)
#   With LIBRARY_LINES=1, .whl also holds the libraries of the problems' SOTA lines the GPU image lacks (fla-core for
#   02, FlashInfer 0.5.3 with the compiled packages its paged decode needs for 03: about 23 MB more).
# Usage: [LIBRARY_LINES=1] bash sweeps/prepare-carry.sh [KERNELBENCH_COM_GIT_DIR]
#   KERNELBENCH_COM_GIT_DIR: a clone (or bare git directory) of github.com/Infatoshi/kernelbench.com; without it
#   only .whl and .debs are built. Each folder is built beside its final place and moved in when complete, so an
#   interrupted run leaves the earlier one intact.
set -euo pipefail
cd "$(dirname "$0")/.."

# The grader's packages with what they need (pip resolves one version of each: two copies of a package stop the
# whole install there); nvidia-cutlass alone, for its headers (its Python needs are never imported by a grading).
WHEELS=(pydantic orjson msgspec pyseccomp rich pygments pyyaml hypothesis nvidia-ml-py ninja)
HEADERS_ONLY=(nvidia-cutlass==4.2.0.0)
# SOTA lines' libraries, without their declared needs: the image has torch, triton, einops, numpy, click, requests,
# tabulate and packaging; FlashInfer's CuTe-DSL kernels (nvidia-cutlass-dsl, not carried) are not on the decode path.
LIBRARY_LINES_WHEELS=(fla-core==0.6.0 flashinfer-python==0.5.3 "apache-tvm-ffi>=0.1,<0.2" nvidia-cudnn-frontend==1.32.0)
DEBS=(bubblewrap util-linux libseccomp2 libcap2 libselinux1 libpcre2-8-0 libsmartcols1 libcap-ng0 libaudit1)

build_wheels() {
  rm -rf .whl.part && mkdir .whl.part
  local platforms=()
  for n in 17 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d .whl.part "${WHEELS[@]}"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
    -d .whl.part "${HEADERS_ONLY[@]}"
  if [ "${LIBRARY_LINES:-0}" = 1 ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any \
      -d .whl.part "${LIBRARY_LINES_WHEELS[@]}"
  fi
  rm -rf .whl && mv .whl.part .whl
}

build_debs() {
  rm -rf .debs.part && mkdir .debs.part
  (cd .debs.part && apt-get download "${DEBS[@]}" >/dev/null)
  rm -rf .debs && mv .debs.part .debs
}

build_foreign() {  # $1: git directory of kernelbench.com
  local git_dir=$1 into=.foreign.part/kernelbench.com commit
  commit=$(git --git-dir "$git_dir" rev-parse HEAD)
  rm -rf .foreign.part && mkdir -p "$into/published-h100"
  git --git-dir "$git_dir" archive HEAD public/runs/h100 benchmarks/hard/problems-h100 benchmarks/hard/src \
    | tar -x -C "$into"
  git --git-dir "$git_dir" show HEAD:benchmarks/hard/results/leaderboard.h100.json \
    > "$into/published-h100/leaderboard.json"
  echo "https://github.com/Infatoshi/kernelbench.com" > "$into/SOURCE"
  echo "$commit" > "$into/COMMIT"
  rm -rf .foreign && mv .foreign.part .foreign
}

build_wheels
build_debs
if [ $# -ge 1 ]; then
  git_dir=$1
  [ -d "$git_dir/.git" ] && git_dir="$git_dir/.git"
  build_foreign "$git_dir"
fi
du -sh .whl .debs ${1:+.foreign} | sed 's/^/carry: /'
echo "the carried total must stay under 64 MiB a call"
