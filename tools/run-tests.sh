#!/bin/sh
# Run every test program given on the command line and sum their results into
# one closing line "N passed, N failed, N skipped".
#
#   run-tests.sh SUITE... [--pg SUITE...]
#
# With --pg, the run has a PostgreSQL server: MOSGW_PG_DSN if it is set, else
# a throwaway cluster started with tools/pgtest.sh for this run and stopped at
# its end (also on failure or interruption); MOSGW_PG_DSN is exported to every
# suite. The suites named after --pg run a second time with
# MOSGW_DB_DRIVER=postgresql (shown as "NAME[pg]"); where no server can be had
# the reason is printed and each of them counts as one skipped suite.
# MOSGW_PG=off runs without a server.
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
here=$(dirname "$0")
pgdir=""
cleanup() {
	[ -n "$pgdir" ] && sh "$here/pgtest.sh" stop "$pgdir" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The suites before --pg, then those after it.
first="" second="" pg=""
for t in "$@"; do
	if [ "$t" = --pg ]; then
		pg=yes
	elif [ -n "$pg" ]; then
		second="$second $t"
	else
		first="$first $t"
	fi
done

nopg=""
if [ -n "$pg" ]; then
	if [ -n "${MOSGW_PG_DSN:-}" ]; then
		echo "PostgreSQL: MOSGW_PG_DSN given"
	elif [ "${MOSGW_PG:-}" = off ]; then
		nopg="MOSGW_PG=off"
	else
		pgdir="$tmp/pg"
		if MOSGW_PG_DSN=$(sh "$here/pgtest.sh" start "$pgdir" 2>"$tmp/pgtest.err"); then
			export MOSGW_PG_DSN
			echo "PostgreSQL: throwaway cluster $MOSGW_PG_DSN"
		else
			nopg=$(grep '^pgtest: ' "$tmp/pgtest.err" | tail -n 1 | sed 's/^pgtest: //')
			nopg=${nopg:-tools/pgtest.sh start failed}
			cat "$tmp/pgtest.err"
		fi
	fi
	[ -n "$nopg" ] && echo "SKIP: no PostgreSQL: $nopg"
fi

pass=0 fail=0 skip=0 broken=""
# run SUITE NAME DRIVER: one suite with MOSGW_DB_DRIVER=DRIVER.
run() {
	t=$1 name=$2
	log="$tmp/$name.log"
	start=$(date +%s)
	case "$t" in
	*.sh) MOSGW_DB_DRIVER=$3 timeout -k 10 "$timeout_s" sh "$t" >"$log" 2>&1 ;;
	*.js|*.mjs) MOSGW_DB_DRIVER=$3 timeout -k 10 "$timeout_s" node "$t" >"$log" 2>&1 ;;
	# shellcheck disable=SC2086
	*) MOSGW_DB_DRIVER=$3 timeout -k 10 "$timeout_s" ${MOSGW_WRAP:-} "$t" >"$log" 2>&1 ;;
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
}

for t in $first; do
	run "$t" "$(basename "$t")" sqlite
done
for t in $second; do
	if [ -n "$nopg" ]; then
		skip=$((skip + 1))
		printf '%-40s %-4s %4d passed %3d failed %3d skipped %4ds\n' \
		    "$(basename "$t")[pg]" skip 0 0 1 0
		echo "    SKIP: no PostgreSQL: $nopg"
	else
		run "$t" "$(basename "$t")[pg]" postgresql
	fi
done

[ -n "$broken" ] && echo "failing suites:$broken"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
