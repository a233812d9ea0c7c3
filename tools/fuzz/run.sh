#!/bin/sh
# make fuzz: run each libFuzzer target named on the command line for
# FUZZ_TIME seconds (default 60), with the limits of its .options file and
# its dictionary.
#
# Seeds: regress --corpus writes our seed streams (tools/fuzz/seed), the
# fixtures and the shared examples, in UTF-16BE and UTF-8 under several
# configuration bytes, into $FUZZ_DIR/seed/TARGET; the kept corpus
# tools/fuzz/corpus/TARGET is read too. What a run learns stays in
# $FUZZ_DIR/corpus/TARGET, under the build directory because it grows from
# the shared examples, which never enter the project tree. A failing input is
# saved in fuzz-artifacts/; once fixed, copy it (if it is not derived from a
# shared example) to tools/fuzz/seed/repro/TARGET/ so that `make check`
# replays it for good.
#
# FUZZ_MERGE=1: refresh the kept corpus instead. The shared examples are left
# out of the seeds, each target runs FUZZ_TIME seconds into a fresh
# directory, and -merge=1 keeps the inputs that add coverage (the kept corpus
# first) as the new tools/fuzz/corpus/TARGET; -use_counters=0 counts every
# edge once, not each hit-count bucket, which keeps a few hundred small files.
#
# ASan keeps a 16 MB quarantine unless ASAN_OPTIONS says otherwise: the
# default 256 MB made the targets page-fault through fresh memory, at a
# quarter of the speed and four times the memory.
set -eu
cd "$MOSGW_TOP"
: "${FUZZ_DIR:?}" "${REGRESS:?}"
time=${FUZZ_TIME:-60}
merge=${FUZZ_MERGE:-0}
seed=$FUZZ_DIR/seed
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:allocator_release_to_os_interval_ms=-1}
export ASAN_OPTIONS

rm -rf "$seed"
if [ "$merge" = 1 ]; then
	MOSGW_SHARED=/nonexistent "$REGRESS" --corpus "$seed"
else
	"$REGRESS" --corpus "$seed"
fi
mkdir -p fuzz-artifacts
status=0
for t in "$@"; do
	# "key = value" lines of the OSS-Fuzz style .options file -> -key=value
	opts=$(sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/-\1=\2/p' \
	    "tools/fuzz/$t.options" | tr '\n' ' ')
	kept=tools/fuzz/corpus/$t
	mkdir -p "$kept" "$seed/$t"
	work=$FUZZ_DIR/corpus/$t
	[ "$merge" = 1 ] && work=$FUZZ_DIR/merge/$t.new && rm -rf "$work"
	mkdir -p "$work"
	echo "==== fuzz: $t for ${time}s ($opts)"
	# shellcheck disable=SC2086
	if ! "$FUZZ_DIR/$t" $opts -max_total_time="$time" -rss_limit_mb=2048 \
	    -print_final_stats=1 -dict="tools/fuzz/$t.dict" \
	    -artifact_prefix="fuzz-artifacts/$t-" \
	    "$work" "$kept" "$seed/$t"; then
		echo "fuzz: $t FAILED; the input is in fuzz-artifacts/" >&2
		status=1
		continue
	fi
	if [ "$merge" = 1 ]; then
		rm -rf "$FUZZ_DIR/merge/$t"
		mkdir -p "$FUZZ_DIR/merge/$t"
		# shellcheck disable=SC2086
		"$FUZZ_DIR/$t" $opts -merge=1 -use_counters=0 \
		    "$FUZZ_DIR/merge/$t" "$kept" \
		    "$work" "$seed/$t" >/dev/null 2>&1
		rm -rf "$kept"
		mv "$FUZZ_DIR/merge/$t" "$kept"
		echo "fuzz: $t: $(ls "$kept" | wc -l) inputs kept in $kept"
	fi
done
[ "$status" -eq 0 ] && echo "fuzz: no failures"
exit "$status"
