#!/bin/sh
# make run: start mosgw in the foreground on loopback with fixtures/mosgw.ini
# (its database in var/, created at start), after printing how to talk to it
# and which NCS it dials. Ctrl-C stops it.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOSGW_BIN:-$top/bin}
conf=${MOSGW_CONF:-$top/fixtures/mosgw.ini}
cd "$top"

if [ ! -x "$bin/mosgw" ]; then
	echo "run: $bin/mosgw is missing: run make first" >&2
	exit 1
fi
# A tokens file for the HTTP API with one admin token, made once.
tokens=var/api-tokens
mkdir -p var
if [ ! -f "$tokens" ]; then
	(umask 077 && printf 'local admin %s\n' \
	    "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" > "$tokens")
fi
token=$(awk '$2 == "admin" { print $3; exit }' "$tokens")
"$bin/mosgw" -n -c "$conf" >/dev/null

# A key of a section (the first [ncs.*] for "ncs"), or its default.
conf_key() {
	awk -v sect="$1" -v want="$2" -v def="$3" '
	/^[ \t]*\[/ {
		if (seen) exit
		s = $0; sub(/^[ \t]*\[/, "", s); sub(/\].*/, "", s)
		insec = (sect == "ncs" ? s ~ /^ncs\./ : s == sect)
		if (insec) { seen = 1; name = substr(s, 5) }
		next
	}
	insec {
		k = $0; sub(/^[ \t]*/, "", k); sub(/[ \t]*[=:].*/, "", k)
		v = $0; sub(/^[^=:]*[=:][ \t]*/, "", v); sub(/[ \t]+[;#].*/, "", v)
		if (k == want) val = v
	}
	END { if (want == "NAME") print name; else if (val != "") print val; else print def }
	' "$conf"
}
ncs=$(conf_key ncs NAME "")
ncs_id=$(conf_key ncs ncs_id "")
host=$(conf_key ncs host "")
lower=$(conf_key ncs lower_port 10540)
upper=$(conf_key ncs upper_port 10541)
mos_id=$(conf_key gateway mos_id "")
glower=$(conf_key gateway lower_port 10540)
gupper=$(conf_key gateway upper_port 10541)
gquery=$(conf_key gateway query_port 10542)
listen=$(conf_key gateway listen 127.0.0.1)
db=$(conf_key database path var/mosgw.db)
case "$db" in
/*) ;;
*) db=$(cd "$(dirname "$conf")" && pwd)/$db ;;
esac
db=$(echo "$db" | sed 's#/[^/]*/\.\./#/#g')
# shorter in the examples when it is under the current directory
dbarg=${db#"$top"/}

listening=""
if command -v nc >/dev/null 2>&1; then
	for p in "$lower" "$upper"; do
		if nc -z -w 1 "$host" "$p" 2>/dev/null; then
			listening="$listening $p"
		fi
	done
fi

cat <<TEXT
mosgw: starting with $conf (database: $db)

  The gateway (mosID $mos_id) listens on $listen:
    $glower  lower port (mosReqObj, mosReqAll, heartbeat, reqMachInfo)
    $gupper  upper port
    $gquery  query port (0: none)

  It dials the NCS "$ncs" (ncsID $ncs_id) at $host:$lower (lower) and
  $host:$upper (upper), expecting a MOS NCS that answers with that ncsID.
  With nothing there (the usual case for a first try) the log shows
  link.down with reason="Connection refused", retries with backoff up
  to reconnect_max, and the circuit breaker opening after 5 failed connects;
  published assets wait in the queue as QUEUED jobs until an NCS answers.
  To play the NCS with Sofie's MOS library (Node.js), in another terminal:
    cd conformance/interop && npm ci && node ncs.js --mos-id $mos_id \\
        --ncs-id $ncs_id --gw-lower $glower --gw-upper $gupper --gw-query $gquery \\
        --lower $lower --upper $upper --query 11542 --expect 1
TEXT
if [ -n "$listening" ]; then
	cat <<TEXT

  NOTE: something already listens on $host port(s)$listening. If it is not
  a MOS NCS with ncsID $ncs_id, expect NACKs, ack timeouts and reconnects
  in the log: stop it, or point [ncs.$ncs] of $conf elsewhere.
TEXT
fi
cat <<TEXT

  Publish an asset (in another terminal):
    $bin/mosctl --db $dbarg asset put CLIP-1 --slug "First clip" \\
        --dur 1500 --path http://media.local/clip-1.mp4 --tech "H.264"
    $bin/mosctl --db $dbarg job ls
    $bin/mosctl --db $dbarg history export -o capture.jsonl

  The HTTP API on 127.0.0.1:8540 (token of "local" in $top/$tokens):
    curl -s http://127.0.0.1:8540/healthz
    curl -s -X PUT -H "Authorization: Bearer $token" \\
        -H "Content-Type: application/json" \\
        -d '{"objSlug":"Second clip","objDur":250}' \\
        http://127.0.0.1:8540/v1/assets/CLIP-2
    curl -s -H "Authorization: Bearer $token" http://127.0.0.1:8540/v1/assets/CLIP-2
    $bin/mosctl --url http://127.0.0.1:8540 --token-file $tokens status
    curl -sN -H "Authorization: Bearer $token" http://127.0.0.1:8540/v1/events
    curl -s http://127.0.0.1:8540/readyz
    curl -s -H "Authorization: Bearer $token" http://127.0.0.1:8540/metrics
  The status page: http://127.0.0.1:8540/ in a browser (any user name, the
  token as the password).

  Ask it something as an NCS would (UTF-16BE on the wire; nc is
  netcat-openbsd, -N closes our side once the request is sent):
    $bin/mosmsg encode < fixtures/request.jsonl | nc -N $listen $glower | $bin/mosmsg decode

  Reload the configuration: kill -HUP <pid>; stop: Ctrl-C (or kill -TERM).
TEXT
exec "$bin/mosgw" -c "$conf"
