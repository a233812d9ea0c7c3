#!/bin/sh
# Run every test program given on the command line and sum their results into
# one closing line "N passed, N failed, N skipped".
#
# A cmocka suite reports "[  PASSED  ] N test(s)." and friends; any other test
# program prints its own "N passed, N failed[, N skipped]" line. A program that
# dies, hangs past MOSGW_TEST_TIMEOUT seconds or prints no count is one failure.
# MOSGW_WRAP, if set, is put in front of every compiled test program (make
# valgrind sets it to a valgrind command line). A failing suite's failure
# lines (a row or test marked FAIL, cmocka's FAILED/ERROR and assertion
# lines) are printed before the last 60 lines of its log, so that what
# failed is named even when the log goes on long after it.
set -u

timeout_s=${MOSGW_TEST_TIMEOUT:-900}
tmp=${MOSGW_TMP:-/tmp}/run-tests.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

pass=0 fail=0 skip=0 broken=""
for t in "$@"; do
	name=$(basename "$t")
	log="$tmp/$name.log"
	start=$(date +%s)
	case "$t" in
	*.sh) timeout -k 10 "$timeout_s" sh "$t" >"$log" 2>&1 ;;
	*.js|*.mjs) timeout -k 10 "$timeout_s" node "$t" >"$log" 2>&1 ;;
	# shellcheck disable=SC2086
	*) timeout -k 10 "$timeout_s" ${MOSGW_WRAP:-} "$t" >"$log" 2>&1 ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	plain=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -n "$plain" ]; then
		p=$((p + $(echo "$plain" | sed 's/^\([0-9]*\) passed.*/\1/')))
		f=$((f + $(echo "$plain" | sed 's/.* \([0-9]*\) failed.*/\1/')))
		case "$plain" in *skipped*)
			s=$((s + $(echo "$plain" | sed 's/.* \([0-9]*\) skipped.*/\1/'))) ;;
		esac
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1	# crashed, timed out or exited non-zero without reporting a failure
	fi
	if [ $((p + f + s)) -eq 0 ]; then
		f=1	# ran no test at all: that is a failure of the suite
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" -ne 0 ]; then
		status=FAIL broken="$broken $name"
		echo "---- $name (exit $rc): failures ----"
		grep -E '( FAIL |^FAIL|^\[  (FAILED|ERROR) +\] [^0-9]|: error: )' \
		    "$log" | head -n 40
		echo "---- $name: last lines ----"
		tail -n 60 "$log"
		echo "----"
	else
		status=ok
	fi
	printf '%-40s %-4s %4d passed %3d failed %3d skipped %4ds\n' "$name" "$status" "$p" "$f" "$s" "$secs"
	# Skips are listed with their reason so that a skipped suite is never silent.
	grep -E '^(\[  SKIPPED \]|SKIP:|skip:)' "$log" | head -n 5 | sed 's/^/    /'
done

[ -n "$broken" ] && echo "failing suites:$broken"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
