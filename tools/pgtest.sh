#!/bin/sh
# A throwaway PostgreSQL cluster for the tests and benchmarks.
#
#   tools/pgtest.sh start DIR     initdb into DIR (the first time), start the
#                                 server and print its DSN on stdout
#   tools/pgtest.sh stop DIR      stop it: fast shutdown, then immediate, then
#                                 SIGKILL; bounded (about 40 s at worst)
#   tools/pgtest.sh restart DIR   stop, then start again on the same port
#   tools/pgtest.sh dsn DIR       print the DSN of the cluster in DIR
#
# The cluster is for tests only: fsync off (PGTEST_DURABLE=1 at the first
# start: fsync, synchronous_commit and full_page_writes on, as a production
# server has them, for the benchmarks), trust authentication for the
# superuser role "mosgw" on a Unix socket in DIR and on 127.0.0.1 at a free
# port picked at the first start (tests need TCP to put a proxy in between).
# PostgreSQL refuses to run as root: under root the server runs as
# $PGTEST_USER (default nobody) and DIR is given to that user. The server
# binaries are taken from $PGTEST_BINDIR, else the newest
# /usr/lib/postgresql/NN/bin (tools/deps.sh installs them).
#
# The DSN is also written to DIR/dsn (TCP) and DIR/socket-dsn (Unix socket).
# On failure the last line on stderr says why, prefixed "pgtest: ".
set -u

die() {
	echo "pgtest: $*" >&2
	exit 1
}

[ $# -eq 2 ] || die "usage: pgtest.sh start|stop|restart|dsn DIR"
cmd=$1
dir=$2
case "$dir" in /*) ;; *) dir=$(pwd)/$dir ;; esac
data=$dir/data
log=$dir/server.log

bindir=${PGTEST_BINDIR:-}
if [ -z "$bindir" ]; then
	# The glob sorts 9 after 15: keep the highest version number.
	bindir=$(for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && echo "$d"
	done | sort -t/ -k5,5n | tail -n 1)
fi
[ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] ||
	die "no PostgreSQL server: initdb and pg_ctl not found in" \
	    "/usr/lib/postgresql/*/bin (tools/deps.sh installs the postgresql package)"

# as_owner CMD...: run CMD as the cluster's owner, from DIR.
if [ "$(id -u)" -eq 0 ]; then
	owner=${PGTEST_USER:-nobody}
	id -u "$owner" >/dev/null 2>&1 || die "user $owner does not exist (set PGTEST_USER)"
	as_owner() {
		(cd "$dir" && runuser -u "$owner" -- env -u PGDATA -u PGPORT -u PGHOST "$@")
	}
else
	owner=$(id -un)
	as_owner() {
		(cd "$dir" && env -u PGDATA -u PGPORT -u PGHOST "$@")
	}
fi

port_of() {
	sed -n "s/^port = \([0-9][0-9]*\).*/\1/p" "$data/postgresql.conf" | tail -n 1
}

write_dsn() {
	p=$(port_of)
	echo "host=127.0.0.1 port=$p user=mosgw dbname=postgres" >"$dir/dsn"
	echo "host=$dir port=$p user=mosgw dbname=postgres" >"$dir/socket-dsn"
	cat "$dir/dsn"
}

# free_port: a TCP port on 127.0.0.1 nothing listens on right now.
free_port() {
	perl -MIO::Socket::INET -e '
	    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
	        LocalPort => 0, Proto => "tcp") or exit 1;
	    print $s->sockport, "\n";'
}

postmaster_pid() {
	[ -f "$data/postmaster.pid" ] && head -n 1 "$data/postmaster.pid"
}

# alive PID: the process exists and is not a zombie (where nothing reaps
# the daemonised postmaster, it stays one after it exits).
alive() {
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	case "$st" in Z*|X*|"") return 1 ;; esac
	return 0
}

running() {
	pid=$(postmaster_pid) || return 1
	[ -n "$pid" ] && alive "$pid"
}

do_init() {
	# A Unix socket path is limited to 107 bytes.
	[ ${#dir} -le 88 ] || die "directory path too long for a Unix socket: $dir"
	mkdir -p "$dir" || die "cannot create $dir"
	chown "$owner" "$dir" 2>/dev/null || [ "$(id -u)" -ne 0 ] ||
		die "cannot give $dir to $owner"
	chmod 700 "$dir"
	as_owner test -w "$dir" ||
		die "$owner cannot write to $dir (every parent directory must be searchable)"
	if ! as_owner timeout 300 "$bindir/initdb" -D "$data" -U mosgw -A trust \
	    -E UTF8 --locale=C --no-sync --no-instructions >"$dir/initdb.log" 2>&1; then
		tail -n 5 "$dir/initdb.log" >&2
		die "initdb failed (see $dir/initdb.log)"
	fi
	sync=off
	[ "${PGTEST_DURABLE:-0}" = 1 ] && sync=on
	cat >>"$data/postgresql.conf" <<EOF

# tools/pgtest.sh: a throwaway test cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = $sync
synchronous_commit = $sync
full_page_writes = $sync
max_connections = 200
shared_buffers = 32MB
max_wal_size = 256MB
logging_collector = off
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
EOF
}

do_start() {
	[ -f "$data/PG_VERSION" ] || do_init
	if running; then
		write_dsn
		return 0
	fi
	tries=0
	while :; do
		tries=$((tries + 1))
		if [ -z "$(port_of)" ] || [ "$tries" -gt 1 ]; then
			p=$(free_port) || die "no free TCP port on 127.0.0.1"
			echo "port = $p" >>"$data/postgresql.conf"
		fi
		: >"$log"
		chown "$owner" "$log" 2>/dev/null
		if as_owner "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 120 \
		    start >"$dir/pg_ctl.log" 2>&1; then
			break
		fi
		# Another program took the port between the pick and the start.
		if [ "$tries" -lt 5 ] && grep -q "could not bind\|Address already in use" "$log"; then
			continue
		fi
		tail -n 5 "$log" >&2
		do_stop >/dev/null 2>&1
		die "the server did not start (see $log)"
	done
	write_dsn
}

do_stop() {
	[ -f "$data/PG_VERSION" ] || return 0
	running || return 0
	as_owner "$bindir/pg_ctl" -D "$data" -m fast -w -t 20 stop >/dev/null 2>&1 && return 0
	as_owner "$bindir/pg_ctl" -D "$data" -m immediate -w -t 10 stop >/dev/null 2>&1 && return 0
	pid=$(postmaster_pid)
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null
		i=0
		while alive "$pid" && [ $i -lt 50 ]; do
			sleep 0.2
			i=$((i + 1))
		done
		alive "$pid" && die "postmaster $pid does not stop"
	fi
	return 0
}

case "$cmd" in
start) do_start ;;
stop) do_stop ;;
restart) do_stop && do_start ;;
dsn)
	[ -f "$data/PG_VERSION" ] || die "no cluster in $dir"
	write_dsn
	;;
*) die "usage: pgtest.sh start|stop|restart|dsn DIR" ;;
esac
