#!/bin/sh
# Install the Debian packages the build, the tests and the benchmarks need.
# Called by make when pkg-config cannot find a dependency; safe to run again.
# Without root, it prints the apt-get command to run instead.
#
#   tools/deps.sh        what make, make check and make bench need
#   tools/deps.sh fuzz   also clang-14 and its libFuzzer runtime (make fuzz)
set -eu

# netcat-openbsd: the README's `nc -N` (and its test); mandoc: the man pages'
# lint check (make check skips it, saying so, where mandoc is missing);
# dpkg-dev, debhelper, fakeroot, lintian and systemd (systemd-analyze,
# systemd-sysusers, systemd-tmpfiles): the Debian package's test; chromium:
# the status page's test in a headless browser (skipped, saying so, where it
# is missing); postgresql (server and psql): the throwaway cluster the tests
# start with tools/pgtest.sh; libpq-dev: the PostgreSQL store.
PKGS="build-essential pkg-config libxml2-dev libevent-dev libssl-dev libsqlite3-dev
libcmocka-dev libjansson-dev libinih-dev libpcap-dev libsystemd-dev sqlite3
beanstalkd tshark netcat-openbsd mandoc dpkg-dev debhelper fakeroot lintian
systemd chromium postgresql libpq-dev"
if [ "${1:-}" = fuzz ]; then
	PKGS="$PKGS clang-14 libclang-rt-14-dev"
fi

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
# Node.js and npm run the interop peer; any install that provides both will do
# (Debian's nodejs + npm, or a vendor build that bundles npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root; run: sudo apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# An apt list older than a day (or none at all) is refreshed first.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -mtime -1 2>/dev/null | head -n 1)" ]; then
	apt-get update -qq
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
