#!/bin/sh
# make fuzz: run each libFuzzer target named on the command line for
# FUZZ_TIME seconds (default 60), with the limits of its .options file and
# its dictionary.
#
# Seeds: regress --corpus writes our seed streams (tools/fuzz/seed), the
# fixtures and the shared examples, in UTF-16BE and UTF-8 under several
# configuration bytes, into $FUZZ_DIR/seed/TARGET. What a run learns stays in
# $FUZZ_DIR/corpus/TARGET, under the build directory because it grows from
# the shared examples, which never enter the project tree. A failing input is
# saved in fuzz-artifacts/; once fixed, copy it (if it is not derived from a
# shared example) to tools/fuzz/seed/repro/TARGET/ so that `make check`
# replays it for good.
set -eu
cd "$MOSGW_TOP"
: "${FUZZ_DIR:?}" "${REGRESS:?}"
time=${FUZZ_TIME:-60}
seed=$FUZZ_DIR/seed

rm -rf "$seed"
"$REGRESS" --corpus "$seed"
mkdir -p fuzz-artifacts
status=0
for t in "$@"; do
	# "key = value" lines of the OSS-Fuzz style .options file -> -key=value
	opts=$(sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/-\1=\2/p' \
	    "tools/fuzz/$t.options" | tr '\n' ' ')
	mkdir -p "$FUZZ_DIR/corpus/$t" "$seed/$t"
	# a corpus kept in the tree (tools/fuzz/corpus/TARGET) seeds it too
	kept=
	[ -d "tools/fuzz/corpus/$t" ] && kept="tools/fuzz/corpus/$t"
	echo "==== fuzz: $t for ${time}s ($opts)"
	# shellcheck disable=SC2086
	if ! "$FUZZ_DIR/$t" $opts -max_total_time="$time" -rss_limit_mb=2048 \
	    -print_final_stats=1 -dict="tools/fuzz/$t.dict" \
	    -artifact_prefix="fuzz-artifacts/$t-" \
	    "$FUZZ_DIR/corpus/$t" "$seed/$t" $kept; then
		echo "fuzz: $t FAILED; the input is in fuzz-artifacts/" >&2
		status=1
	fi
done
[ "$status" -eq 0 ] && echo "fuzz: no failures"
exit "$status"
