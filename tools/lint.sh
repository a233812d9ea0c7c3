#!/bin/sh
# make lint: static analysis of our own sources with cppcheck (installed on
# demand, as the build does with its libraries).
set -eu
if ! command -v cppcheck >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cppcheck >/dev/null
	else
		echo "lint: cppcheck missing; run: sudo apt-get install -y cppcheck" >&2
		exit 1
	fi
fi
inc=$(pkg-config --cflags-only-I libxml-2.0 sqlite3 libevent jansson inih cmocka)
# cppcheck reads no system header: give it the TAILQ macros of <sys/queue.h>
queue_h=/usr/include/$(cc -dumpmachine)/sys/queue.h
[ -f "$queue_h" ] || queue_h=/usr/include/sys/queue.h
# shellcheck disable=SC2086
cppcheck --quiet --std=c11 --enable=warning,performance,portability \
	--inline-suppr --error-exitcode=1 -D_GNU_SOURCE -I. $inc \
	--include="$queue_h" \
	--suppress=missingIncludeSystem \
	mosxml store queue gateway tools conformance bench
echo "lint: clean"
