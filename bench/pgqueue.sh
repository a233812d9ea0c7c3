#!/bin/sh
# make bench, PostgreSQL queue part: the job queue's claim+complete rate on
# PostgreSQL beside a bare FOR UPDATE SKIP LOCKED queue on the same server
# ($MOSGW_PG_DSN: bench/run.sh starts a throwaway cluster; without one the
# rows say why they were skipped).
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_pgqueue" ]; then
	echo "pgqueue: $dir/bench_pgqueue not built (make bench builds it)" >&2
	exit 1
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 600 "$dir/bench_pgqueue"
