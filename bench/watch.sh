#!/bin/sh
# make bench, watching part: the publish rate of the real mosgw with
# /metrics scraped every second and JSON logs at level info, beside the
# same without them, measured alternately in the same run.
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_watch" ]; then
	echo "watch: $dir/bench_watch not built (make bench builds it)" >&2
	exit 1
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 300 "$dir/bench_watch"
