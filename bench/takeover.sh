#!/bin/sh
# make bench, takeover part: three mosgw instances on one PostgreSQL
# database and one scripted NCS; the owner of the NCS's links killed with
# SIGKILL 20 times: the time to the new owner's link and to the first
# mosObj after it ($MOSGW_PG_DSN: bench/run.sh starts a throwaway cluster;
# without one the row says why it was skipped).
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_takeover" ]; then
	echo "takeover: $dir/bench_takeover not built (make bench builds it)" >&2
	exit 1
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 600 "$dir/bench_takeover"
