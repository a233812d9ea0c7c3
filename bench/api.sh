#!/bin/sh
# make bench, API part: the HTTP API of the real mosgw (synchronous = full)
# beside an evhttp handler that does nothing, with the same client in the
# same run: PUT latency at a paced rate (to the 202 and to the NCS's
# wire), the PUT rate of many keep-alive clients, the NDJSON import rate;
# then the latency and rate again on PostgreSQL ($MOSGW_PG_DSN, which
# bench/run.sh provides), one line per store.
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_api" ]; then
	echo "api: $dir/bench_api not built (make bench builds it)" >&2
	exit 1
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 600 "$dir/bench_api"
