#!/bin/sh
# make bench, codec part: framer, frame+parse+model and the writer for a
# typical mosObj and a large roCreate, beside a bare libxml2 xmlReadMemory
# loop measured in the same run (bench/bench_codec.c).
#
# bench_codec is built into $(B)/bench; MOSGW_TMP is $(B)/tmp, so the
# default location is found from it. MOSGW_BENCH overrides the directory,
# BENCH_TIME the seconds spent on each figure (default 1).
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
if [ ! -x "$dir/bench_codec" ]; then
	echo "codec: $dir/bench_codec not built (make bench builds it)" >&2
	exit 1
fi
timeout 120 "$dir/bench_codec"
