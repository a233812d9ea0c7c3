#!/bin/sh
# make bench, search part: mosgw's search over a 100,000-asset catalog
# beside a bare FTS5 query on the same index (p50/p99 per kind of query).
#
# bench_search is built into $(B)/bench; MOSGW_BENCH overrides the
# directory; SEARCH_BENCH_ASSETS and SEARCH_BENCH_QUERIES the sizes.
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_search" ]; then
	echo "search: $dir/bench_search not built (make bench builds it)" >&2
	exit 1
fi
work=$(mktemp -d "$tmp/bench-search.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
timeout 600 "$dir/bench_search" -d "$work" \
    -n "${SEARCH_BENCH_ASSETS:-100000}" -q "${SEARCH_BENCH_QUERIES:-500}"
