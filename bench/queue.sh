#!/bin/sh
# make bench, queue part: the SQLite job queue (synchronous FULL and NORMAL)
# beside beanstalkd with its binlog, fsync on every write (-f 0) and every
# 50 ms (-f 50, its default), started here on loopback and stopped again.
#
# bench_queue is built into $(B)/bench; MOSGW_TMP is $(B)/tmp, so the
# default location is found from it. MOSGW_BENCH overrides the directory;
# QUEUE_BENCH_SECS the seconds of each of the 3 runs of a cell (0.4).
set -eu
top=${MOSGW_TOP:-$(pwd)}
tmp=${MOSGW_TMP:-$top/build/default/tmp}
dir=${MOSGW_BENCH:-$(dirname "$tmp")/bench}
secs=${QUEUE_BENCH_SECS:-0.4}
mkdir -p "$tmp"
if [ ! -x "$dir/bench_queue" ]; then
	echo "queue: $dir/bench_queue not built (make bench builds it)" >&2
	exit 1
fi
work=$(mktemp -d "$tmp/bench-queue.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Start beanstalkd with a binlog on a free loopback port: sets $port.
start_beanstalkd() {
	fsync=$1
	mkdir -p "$work/binlog-f$fsync"
	port=$((21300 + $$ % 1000 * 10 + fsync % 7))
	for _ in 1 2 3 4 5 6 7 8; do
		port=$((port + 1))
		beanstalkd -l 127.0.0.1 -p "$port" -b "$work/binlog-f$fsync" \
		    -f "$fsync" 2>>"$work/beanstalkd.log" &
		pid=$!
		sleep 0.3
		if kill -0 "$pid" 2>/dev/null; then
			pids="$pids $pid"
			return 0
		fi
		wait "$pid" 2>/dev/null || true
	done
	port=""
	return 1
}

args="-d $work -t $secs"
if command -v beanstalkd >/dev/null 2>&1; then
	start_beanstalkd 0 || true
	p0=$port
	start_beanstalkd 50 || true
	p50=$port
	[ -n "$p0" ] && args="$args -f $p0"
	[ -n "$p50" ] && args="$args -n $p50"
	if [ -z "$p0$p50" ]; then
		echo "queue: beanstalkd would not start:" \
		    "$(cat "$work/beanstalkd.log")" >&2
	fi
else
	echo "queue: beanstalkd not installed (tools/deps.sh installs it);" \
	    "its columns stay empty" >&2
fi
# shellcheck disable=SC2086
timeout 300 "$dir/bench_queue" $args
