#!/bin/sh
# The manual pages: mandoc -Tlint finds nothing in any of them, mosgw.ini(5)
# documents every key `mosgw -D` prints, mosgw(8) every option of
# `mosgw --help`. Without mandoc (tools/deps.sh installs it) the lint is
# skipped, saying so; the other checks still run.
set -u

top=${MOSGW_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${MOSGW_BIN:-$top/bin}
pages="mosgw.8 mosgw.ini.5 mosctl.1 mosmsg.1 mosreplay.1"
pass=0 fail=0 skip=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

if command -v mandoc >/dev/null 2>&1; then
	for p in $pages; do
		# a stale mandoc.db of the system is not the page's fault
		# run in man/ so that the pages find each other (Xr)
		out=$(cd "$top/man" && mandoc -Tlint -W style "$p" 2>&1 |
		    grep -v "outdated mandoc.db")
		if [ -z "$out" ]; then
			ok "mandoc -Tlint $p"
		else
			bad "mandoc -Tlint $p"
			echo "$out" | sed 's/^/    /'
		fi
	done
else
	echo "SKIP: mandoc is not installed (tools/deps.sh installs it): pages not linted"
	skip=$((skip + 1))
fi

for p in $pages; do
	if [ -f "$top/man/$p" ] && head -n 3 "$top/man/$p" | grep -q '^\.Dt '; then
		ok "$p is mdoc"
	else
		bad "$p is missing or not mdoc"
	fi
done

# every key of the template, as .It Cm KEY (several keys may share a line)
missing=""
keys=$("$bin/mosgw" -D | sed -n 's/^\([a-z_]*\) = .*/\1/p' | sort -u)
[ -n "$keys" ] || bad "mosgw -D printed no key"
for k in $keys; do
	if ! grep -E "^\.It Cm (.*[ ,])?$k( |,|$)" "$top/man/mosgw.ini.5" >/dev/null; then
		missing="$missing $k"
	fi
done
if [ -z "$missing" ]; then
	ok "mosgw.ini.5 documents every key of mosgw -D"
else
	bad "mosgw.ini.5 lacks keys:$missing"
fi

# every option of mosgw --help, as .It Fl X
missing=""
for o in $("$bin/mosgw" --help | sed -n 's/^  \(-[a-zA-Z]\),.*/\1/p'); do
	grep -q "^\.It Fl ${o#-}\( \|$\)" "$top/man/mosgw.8" || missing="$missing $o"
done
if [ -z "$missing" ]; then
	ok "mosgw.8 documents every option of mosgw --help"
else
	bad "mosgw.8 lacks options:$missing"
fi

# make install puts each page in its section (dry run: nothing is built)
plan=$(cd "$top" && env -u MAKEFLAGS -u MAKELEVEL make -n install \
    DESTDIR=/nonexistent PREFIX=/usr 2>/dev/null)
missing=""
for p in $pages; do
	s=${p##*.}
	echo "$plan" | grep "install -m 644" | grep -q "man/$p.*/nonexistent/usr/share/man/man$s/" ||
	    missing="$missing $p"
done
if [ -z "$missing" ]; then
	ok "make install installs every page in PREFIX/share/man/manN"
else
	bad "make install misses:$missing"
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
