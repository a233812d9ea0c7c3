#!/bin/sh
# The throwaway PostgreSQL cluster of the tests (tools/pgtest.sh): a cluster
# of its own in a temporary directory, started, used over TCP and over its
# Unix socket, restarted and stopped. Ends with "N passed, N failed, N skipped".
set -u

top=${MOSGW_TOP:-.}
rig=$top/tools/pgtest.sh

if ! command -v psql >/dev/null 2>&1; then
	echo "SKIP: no PostgreSQL: psql is not installed (tools/deps.sh installs postgresql)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

tmp=$(mktemp -d "${MOSGW_TMP:-/tmp}/pgtest.XXXXXX")
chmod 755 "$tmp"	# the server's user (not root) must reach the cluster in it
trap 'sh "$rig" stop "$tmp/pg" >/dev/null 2>&1; rm -rf "$tmp"' EXIT INT TERM
. "$top/tools/testlib.sh"

# q DSN SQL: one query, unaligned output.
q() {
	timeout 60 psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>>"$tmp/psql.err"
}

if [ -n "${MOSGW_PG_DSN:-}" ]; then
	check "the run's server answers at MOSGW_PG_DSN" \
	    sh -c "[ \"\$(psql -X -At -d '$MOSGW_PG_DSN' -c 'select 1' 2>&1)\" = 1 ]"
fi

dsn=$(sh "$rig" start "$tmp/pg" 2>"$tmp/start.err")
rc=$?
if [ $rc -ne 0 ] && grep -q "^pgtest: no PostgreSQL server" "$tmp/start.err"; then
	echo "SKIP: no PostgreSQL: $(tail -n 1 "$tmp/start.err" | sed 's/^pgtest: //')"
	echo "$pass passed, $fail failed, 1 skipped"
	exit 0
fi
cat "$tmp/start.err"
check "start prints a TCP DSN on 127.0.0.1" \
    sh -c "[ $rc -eq 0 ] && echo '$dsn' | grep -qE '^host=127\.0\.0\.1 port=[0-9]+ user=mosgw dbname=postgres$'"
if [ $rc -ne 0 ]; then
	echo "$pass passed, $((fail + 1)) failed, 0 skipped"
	exit 1
fi
port=$(echo "$dsn" | sed -n 's/.*port=\([0-9]*\).*/\1/p')
sockdsn=$(cat "$tmp/pg/socket-dsn" 2>/dev/null)

check "the superuser mosgw connects over TCP" \
    sh -c "[ \"\$(psql -X -At -d '$dsn' -c 'select rolsuper from pg_roles where rolname = current_user' 2>&1)\" = t ]"
check "and over the Unix socket in the cluster's directory" \
    sh -c "[ -S '$tmp/pg/.s.PGSQL.$port' ] && [ \"\$(psql -X -At -d '$sockdsn' -c 'select 1' 2>&1)\" = 1 ]"
check "the server does not run as root" \
    sh -c "pid=\$(head -n 1 '$tmp/pg/data/postmaster.pid') &&
           uid=\$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/\$pid/status) &&
           [ -n \"\$uid\" ] && [ \"\$uid\" != 0 ]"
check "fsync is off" sh -c "[ \"\$(psql -X -At -d '$dsn' -c 'show fsync')\" = off ]"
check "it listens on loopback only" \
    sh -c "[ \"\$(psql -X -At -d '$dsn' -c 'show listen_addresses')\" = 127.0.0.1 ]"

q "$dsn" "create table kept (v int); insert into kept values (42)"
check "restart keeps the port and the data" \
    sh -c "[ \"\$(sh '$rig' restart '$tmp/pg')\" = '$dsn' ] &&
           [ \"\$(psql -X -At -d '$dsn' -c 'select v from kept')\" = 42 ]"
check "start on a running cluster prints its DSN again" \
    sh -c "[ \"\$(sh '$rig' start '$tmp/pg')\" = '$dsn' ]"

pid=$(head -n 1 "$tmp/pg/data/postmaster.pid")
# A session in a transaction must not hold the fast shutdown up.
(timeout 120 psql -X -q -d "$dsn" -c "begin; select pg_sleep(100)" >/dev/null 2>&1 &)
i=0
while [ "$(q "$dsn" "select count(*) from pg_stat_activity where query like '%pg_sleep(100)%' and pid <> pg_backend_pid()")" != 1 ] &&
    [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
start=$(date +%s)
sh "$rig" stop "$tmp/pg"
secs=$(( $(date +%s) - start ))
check "stop ends the server and its sessions (in ${secs}s)" \
    sh -c "! grep -q '^[^)]*) [^ZX]' /proc/$pid/stat 2>/dev/null && ! psql -X -At -d '$dsn' -c 'select 1' >/dev/null 2>&1"
check "stop on a stopped cluster succeeds" sh "$rig" stop "$tmp/pg"
check "a stopped cluster starts again with its data" \
    sh -c "[ \"\$(sh '$rig' start '$tmp/pg')\" = '$dsn' ] &&
           [ \"\$(psql -X -At -d '$dsn' -c 'select v from kept')\" = 42 ]"
long=$tmp/$(printf '%090d' 0)
check "a directory too long for a Unix socket is refused, saying so" \
    sh -c "! sh '$rig' start '$long' 2>'$tmp/long.err' && grep -q 'too long' '$tmp/long.err' && [ ! -e '$long' ]"
sh "$rig" stop "$tmp/pg"

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
