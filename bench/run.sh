#!/bin/sh
# make bench: every benchmark part, each printing its figures beside its peer.
#
# The parts that measure PostgreSQL (api, pgqueue, takeover) use one
# throwaway cluster started here with tools/pgtest.sh (fsync and
# synchronous_commit on: PGTEST_DURABLE=1) and stopped at the end, unless
# MOSGW_PG_DSN names a server already. Where none can be had, its reason is
# passed on in MOSGW_BENCH_NOPG and those rows say "skipped: REASON".
# BENCH_PARTS (e.g. "pgqueue takeover") runs only those parts.
set -eu
cd "$MOSGW_TOP"
tmp=${MOSGW_TMP:-$MOSGW_TOP/build/default/tmp}
mkdir -p "$tmp"
pgdir=""
cleanup() {
	if [ -n "$pgdir" ]; then
		sh tools/pgtest.sh stop "$pgdir/pg" >/dev/null 2>&1 || true
		rm -rf "$pgdir"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ -z "${MOSGW_PG_DSN:-}" ]; then
	pgdir=$(mktemp -d "$tmp/bench-pg.XXXXXX")
	chmod 755 "$pgdir"
	if MOSGW_PG_DSN=$(PGTEST_DURABLE=1 sh tools/pgtest.sh start \
	    "$pgdir/pg" 2>"$pgdir/pgtest.err"); then
		export MOSGW_PG_DSN
		echo "PostgreSQL: throwaway cluster $MOSGW_PG_DSN (fsync on)"
	else
		MOSGW_BENCH_NOPG=$(grep '^pgtest: ' "$pgdir/pgtest.err" |
		    tail -n 1 | sed 's/^pgtest: //')
		MOSGW_BENCH_NOPG=${MOSGW_BENCH_NOPG:-tools/pgtest.sh start failed}
		export MOSGW_BENCH_NOPG
		unset MOSGW_PG_DSN
		echo "PostgreSQL: none ($MOSGW_BENCH_NOPG)"
	fi
fi
for part in ${BENCH_PARTS:-codec queue gateway ro search api watch pgqueue takeover}; do
	echo "==== bench: $part"
	t0=$(date +%s)
	sh "bench/$part.sh"
	echo "==== bench: $part took $(($(date +%s) - t0)) s"
done
