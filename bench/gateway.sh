#!/bin/sh
# make bench, gateway part: asset changes per second through the real mosgw
# into a C NCS sink, beside the sink's bare ping-pong ceiling and a
# JavaScript MOS device (Sofie's library) measured in the same run.
#
# bench_gateway is built into $(B)/bench; MOSGW_TMP is $(B)/tmp, so the
# default location is found from it. MOSGW_BENCH overrides the directory.
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_gateway" ]; then
	echo "gateway: $dir/bench_gateway not built (make bench builds it)" >&2
	exit 1
fi
# The JavaScript peer needs the pinned library; fetch it if we can.
if [ ! -d "$top/conformance/interop/node_modules/@mos-connection/connector" ] &&
    command -v npm >/dev/null 2>&1; then
	(cd "$top/conformance/interop" && timeout 300 npm ci --no-audit --no-fund \
	    >"$tmp/bench-npm.log" 2>&1) ||
	    echo "gateway: npm ci failed (see $tmp/bench-npm.log); the JS peer is quoted" >&2
fi
MOSGW_TOP=$top MOSGW_TMP=$tmp timeout 300 "$dir/bench_gateway"
