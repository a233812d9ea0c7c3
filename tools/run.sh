#!/bin/sh
# make run: start mosgw in the foreground on loopback with fixtures/mosgw.ini,
# its database under var/, after printing how to talk to it. Ctrl-C stops it.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOSGW_BIN:-$top/bin}
conf=${MOSGW_CONF:-$top/fixtures/mosgw.ini}
cd "$top"
mkdir -p var

if [ ! -x "$bin/mosgw" ]; then
	echo "run: $bin/mosgw is missing: run make first" >&2
	exit 1
fi
# A tokens file for the HTTP API with one admin token, made once.
tokens=var/api-tokens
if [ ! -f "$tokens" ]; then
	(umask 077 && printf 'local admin %s\n' \
	    "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" > "$tokens")
fi
token=$(awk '$2 == "admin" { print $3; exit }' "$tokens")
"$bin/mosgw" -n -c "$conf" >/dev/null

cat <<TEXT
mosgw: starting with $conf (database: $top/var/mosgw.db)

  The gateway listens on 127.0.0.1:
    10540  lower port (mosReqObj, mosReqAll, heartbeat, reqMachInfo)
    10541  upper port
    10542  query port
    8540   HTTP API (docs/api.md)
  It connects out to the NCS "local" (ncsID NCS.LOCAL) at 127.0.0.1:11540
  (lower) and 11541 (upper); until something listens there it retries
  with backoff, which the log shows.

  Publish an asset (in another terminal):
    $bin/mosctl --db var/mosgw.db asset put CLIP-1 --slug "First clip" \\
        --dur 1500 --path http://media.local/clip-1.mp4 --tech "H.264"
    $bin/mosctl --db var/mosgw.db job ls
    $bin/mosctl --db var/mosgw.db history export -o var/capture.jsonl

  The HTTP API on 127.0.0.1:8540 (token of "local" in $top/$tokens):
    curl -s http://127.0.0.1:8540/healthz
    curl -s -X PUT -H "Authorization: Bearer $token" \\
        -H "Content-Type: application/json" \\
        -d '{"objSlug":"Second clip","objDur":250}' \\
        http://127.0.0.1:8540/v1/assets/CLIP-2
    curl -s -H "Authorization: Bearer $token" http://127.0.0.1:8540/v1/assets/CLIP-2

  Ask it something (the NCS side, UTF-16BE on the wire):
    $bin/mosmsg encode < request.jsonl | nc 127.0.0.1 10540 | $bin/mosmsg decode

  Reload the configuration: kill -HUP <pid>; stop: Ctrl-C (or kill -TERM).
TEXT
exec "$bin/mosgw" -c "$conf"
