#!/bin/sh
# make bench, running-order part: roCreate (1,000 items and ~10 MB) stored
# and acknowledged by the real mosgw, and roElementActions per second with
# synchronous full and normal, beside bare SQLite transactions and the codec
# alone, measured in the same run.
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_ro" ]; then
	echo "ro: $dir/bench_ro not built (make bench builds it)" >&2
	exit 1
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 300 "$dir/bench_ro"
