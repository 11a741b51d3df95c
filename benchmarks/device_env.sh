# Sourced by the device scripts: what a lent GPU machine lacks for grading, from what the call carried.
#   carry: .whl (the grader's Python packages, Python 3.12 wheels, and nvidia-cutlass for the CUTLASS headers) .debs (Debian's bubblewrap, util-linux and
#   libseccomp2 with their libraries)
# Each piece is installed only where the machine lacks it: the grader's packages into /tmp/site; bwrap, setpriv and
# libseccomp unpacked under /usr/local/kb (inside /usr, which every sandbox shows read-only, since setpriv runs
# inside the sandbox), each binary started through the loader with its own libraries, so none of them reaches the
# environment of the processes it starts.
set -uo pipefail
if ! python3 -c "import pydantic, orjson, msgspec, pyseccomp, cutlass_library" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
kb_unpack() {  # unpack the carried .debs once, under /usr/local/kb
  [ -d /usr/local/kb/root ] && return 0
  mkdir -p /usr/local/kb/root
  for deb in .debs/*.deb; do dpkg -x "$deb" /usr/local/kb/root; done
}
kb_wrap() {  # /usr/local/bin/NAME: the carried binary through the loader, its libraries beside it
  local name=$1 path=$2
  local libs=/usr/local/kb/root/lib/x86_64-linux-gnu:/usr/local/kb/root/usr/lib/x86_64-linux-gnu
  printf '#!/bin/sh\nexec /lib64/ld-linux-x86-64.so.2 --library-path %s %s "$@"\n' "$libs" "$path" \
    > "/usr/local/bin/$name"
  chmod 755 "/usr/local/bin/$name"
}
if ! command -v bwrap >/dev/null 2>&1; then
  kb_unpack && kb_wrap bwrap /usr/local/kb/root/usr/bin/bwrap
fi
if ! command -v setpriv >/dev/null 2>&1; then
  kb_unpack && kb_wrap setpriv /usr/local/kb/root/usr/bin/setpriv
fi
if ! python3 -c "import pyseccomp" 2>/dev/null; then  # pyseccomp finds libseccomp through the loader's cache
  kb_unpack
  echo /usr/local/kb/root/usr/lib/x86_64-linux-gnu > /etc/ld.so.conf.d/zz-kernelbench.conf
  ldconfig
fi
