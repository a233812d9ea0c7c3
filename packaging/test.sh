#!/bin/sh
# The Debian package and `make install`. In a temporary copy of the tree
# (the checkout is never written): dpkg-buildpackage -us -uc -b, then
#  - the package's files, their modes and owners, its conffiles;
#  - lintian: no error and no warning;
#  - systemd-analyze verify on the unit (and its sandbox's exposure);
#  - the package extracted into a temporary root, where systemd-sysusers and
#    systemd-tmpfiles make the user, the state directory and the tokens file
#    as the postinst does, and the packaged `mosgw -n` passes the packaged
#    /etc/mosgw/mosgw.ini (its paths moved into that root);
#  - `make install` and `make uninstall` with DESTDIR and PREFIX.
# Without dpkg-buildpackage, debhelper, fakeroot or lintian (tools/deps.sh
# installs them) the suite is skipped, saying so.
set -u

top=${MOSGW_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=${MOSGW_TMP:-/tmp}/packaging.$$
. "$top/tools/testlib.sh"
# same NAME EXPECTED ACTUAL
same() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		bad "$1"
		echo "    expected '$2', got '$3'"
	fi
}
finish() {
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}

missing=""
for c in dpkg-buildpackage dh fakeroot lintian systemd-analyze; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
if [ -n "$missing" ]; then
	echo "SKIP: missing$missing (tools/deps.sh installs them): package not built"
	skip=1
	finish
fi

mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# The tracked files and the new ones not ignored (build/, bin/, var/,
# node_modules/ are), as they are in the working tree.
src=$tmp/src
mkdir -p "$src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z -co --exclude-standard |
	    tar -cf - --null -T -) | tar -xf - -C "$src"
else
	(cd "$top" && tar -cf - --exclude=./build --exclude=./bin \
	    --exclude=./var --exclude=./.git --exclude=node_modules .) |
	    tar -xf - -C "$src"
fi

version=$(sed -n '1s/^mosgw (\([^)]*\)).*/\1/p' "$src/debian/changelog")
arch=$(dpkg --print-architecture)
deb=$tmp/mosgw_${version}_$arch.deb
start=$(date +%s)
if (cd "$src" && DEB_BUILD_OPTIONS="parallel=2 nocheck noddebs" \
    timeout -k 10 600 dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 &&
    [ -f "$deb" ]; then
	ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start)) s)"
else
	bad "dpkg-buildpackage -us -uc -b"
	tail -n 40 "$tmp/build.log" | sed 's/^/    /'
	finish
fi

# Contents: every file with its mode and owner; nothing else (no test
# program, no tokens file: systemd-tmpfiles makes that one).
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $1, $2, $6 }' |
    sed 's|\./||' >"$tmp/files"
expect() {
	if grep -qx -- "$1" "$tmp/files"; then
		ok "package has $1"
	else
		bad "package lacks $1"
	fi
}
for f in usr/sbin/mosgw usr/bin/mosctl usr/bin/mosmsg usr/bin/mosreplay; do
	expect "-rwxr-xr-x root/root $f"
done
for f in etc/mosgw/mosgw.ini lib/systemd/system/mosgw.service \
    usr/lib/sysusers.d/mosgw.conf usr/lib/tmpfiles.d/mosgw.conf \
    usr/share/man/man1/mosctl.1.gz usr/share/man/man1/mosmsg.1.gz \
    usr/share/man/man1/mosreplay.1.gz usr/share/man/man5/mosgw.ini.5.gz \
    usr/share/man/man8/mosgw.8.gz usr/share/doc/mosgw/copyright \
    usr/share/doc/mosgw/install.md; do
	expect "-rw-r--r-- root/root $f"
done
extra=$(awk '{ print $3 }' "$tmp/files" | grep -Ev '^(usr/sbin/mosgw|usr/bin/(mosctl|mosmsg|mosreplay)|etc/mosgw/mosgw\.ini|lib/systemd/system/mosgw\.service|usr/lib/(sysusers|tmpfiles)\.d/mosgw\.conf|usr/share/man/man[158]/[a-z.]*\.[158]\.gz|usr/share/doc/mosgw/.*)$')
if [ -z "$extra" ]; then
	ok "package holds nothing else"
else
	bad "package holds unexpected files"
	echo "$extra" | sed 's/^/    /'
fi
dpkg-deb -e "$deb" "$tmp/control"
check "conffiles: /etc/mosgw/mosgw.ini only" \
    test "$(cat "$tmp/control/conffiles")" = /etc/mosgw/mosgw.ini
check "the packaged configuration is packaging/mosgw.ini" \
    sh -c "dpkg-deb --fsys-tarfile '$deb' | tar -xOf - ./etc/mosgw/mosgw.ini |
    cmp - '$top/packaging/mosgw.ini'"
fields=$(dpkg-deb -f "$deb" Package Section Depends)
check "control: Package mosgw, Section net, shared libraries in Depends" \
    sh -c "echo '$fields' | grep -qx 'Package: mosgw' &&
    echo '$fields' | grep -qx 'Section: net' &&
    echo '$fields' | grep -q '^Depends:.*libsqlite3-0.*libxml2'"
check "postinst creates the user and the tokens file, then starts the unit" \
    sh -c "awk '/systemd-sysusers/ { u = NR } /systemd-tmpfiles/ { t = NR }
    /deb-systemd-invoke/ && !s { s = NR }
    END { exit !(u && t && s && u < t && t < s) }' '$tmp/control/postinst'"

# lintian: errors and warnings fail (informational tags are printed)
start=$(date +%s)
timeout -k 10 300 lintian --fail-on error,warning -I \
    "$tmp"/mosgw_"${version}"_"$arch".changes >"$tmp/lintian.log" 2>&1
rc=$?
sed '/running with root privileges/d; s/^/    /' "$tmp/lintian.log"
if [ "$rc" -eq 0 ]; then
	ok "lintian: no error, no warning ($(($(date +%s) - start)) s)"
else
	bad "lintian (exit $rc)"
fi

# The package as it lands on a system, in a temporary root.
root=$tmp/root
dpkg-deb -x "$deb" "$root"
check "mosgw -V names the package's version" \
    sh -c "'$root/usr/sbin/mosgw' -V | grep -q '^mosgw $version '"

# systemd-analyze verify: the unit as packaged, pointing at the extracted
# binary, with its man pages on MANPATH. It reports some problems only as
# messages, so any output fails too.
mkdir -p "$tmp/unit"
sed "s|/usr/sbin/mosgw|$root/usr/sbin/mosgw|g" \
    "$root/lib/systemd/system/mosgw.service" >"$tmp/unit/mosgw.service"
out=$(MANPATH=$root/usr/share/man systemd-analyze verify \
    "$tmp/unit/mosgw.service" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$out" ]; then
	ok "systemd-analyze verify mosgw.service"
else
	bad "systemd-analyze verify mosgw.service (exit $rc)"
	echo "$out" | sed 's/^/    /'
fi
for k in Type=notify WatchdogSec= User=mosgw StateDirectory=mosgw \
    ConfigurationDirectory=mosgw ProtectSystem=strict ProtectHome=yes \
    PrivateTmp=yes NoNewPrivileges=yes "CapabilityBoundingSet=" \
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" \
    SystemCallFilter=@system-service "ExecReload=/bin/kill -HUP \$MAINPID" \
    Restart=on-failure; do
	check "mosgw.service: $k" grep -q "^$k" "$tmp/unit/mosgw.service"
done
if out=$(MANPATH=$root/usr/share/man systemd-analyze security --offline=yes \
    --threshold=20 "$tmp/unit/mosgw.service" 2>&1); then
	ok "systemd-analyze security: $(echo "$out" | sed -n 's/.*exposure level for [^:]*: \([0-9.]* [A-Z]*\).*/\1/p') (at most 2.0)"
else
	bad "systemd-analyze security: exposure over 2.0"
	echo "$out" | tail -n 30 | sed 's/^/    /'
fi

# What the postinst does, into the root: the user and group from
# sysusers.d, the state directory and the tokens file from tmpfiles.d
# (these need root to give files to the mosgw user).
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$root/var/lib"
	check "systemd-sysusers creates the mosgw user" sh -c \
	    "systemd-sysusers --root='$root' mosgw.conf &&
	    grep -q '^mosgw:x:[0-9]*:[0-9]*:.*:/var/lib/mosgw:/usr/sbin/nologin\$' \
	    '$root/etc/passwd' && grep -q '^mosgw:x:' '$root/etc/group'"
	check "systemd-tmpfiles creates the state directory and tokens file" sh -c \
	    "systemd-tmpfiles --root='$root' --create mosgw.conf"
	uid=$(awk -F: '$1 == "mosgw" { print $3 }' "$root/etc/passwd")
	gid=$(awk -F: '$1 == "mosgw" { print $3 }' "$root/etc/group")
	same "/var/lib/mosgw is mosgw:mosgw 0750" "750 $uid $gid" \
	    "$(stat -c '%a %u %g' "$root/var/lib/mosgw")"
	same "/etc/mosgw/api-tokens is root:mosgw 0640" "640 0 $gid" \
	    "$(stat -c '%a %u %g' "$root/etc/mosgw/api-tokens")"
	# an operator's token and mode survive an upgrade (or boot); the mode
	# is set back
	echo "ops admin 0123456789abcdef0123456789abcdef" \
	    >>"$root/etc/mosgw/api-tokens"
	chmod 644 "$root/etc/mosgw/api-tokens"
	systemd-tmpfiles --root="$root" --create mosgw.conf
	same "tmpfiles again: tokens kept, mode set back to 0640" "640 1" \
	    "$(stat -c %a "$root/etc/mosgw/api-tokens") $(grep -c '^ops admin ' \
	    "$root/etc/mosgw/api-tokens")"
else
	echo "SKIP: not root: systemd-sysusers and systemd-tmpfiles not run into the root"
	uid=""
	skip=$((skip + 4))
	mkdir -p "$root/var/lib"
	printf '# NAME ROLE TOKEN\n' >"$root/etc/mosgw/api-tokens"
fi
sed "s|/var/lib/mosgw|$root/var/lib/mosgw|g" "$root/etc/mosgw/mosgw.ini" \
    >"$root/etc/mosgw/mosgw.ini.moved"
mv "$root/etc/mosgw/mosgw.ini.moved" "$root/etc/mosgw/mosgw.ini"
chmod 644 "$root/etc/mosgw/mosgw.ini"
# As root, the rest runs as the mosgw user, as the unit does: it must read
# the configuration and the tokens and write the state directory.
as=""
if [ "$(id -u)" -eq 0 ] && [ -n "$uid" ] &&
    setpriv --reuid="$uid" --regid="$gid" --clear-groups true 2>/dev/null &&
    setpriv --reuid="$uid" --regid="$gid" --clear-groups test -x "$root/usr/sbin/mosgw"; then
	as="setpriv --reuid=$uid --regid=$gid --clear-groups"
	check "the mosgw user reads the tokens file" \
	    $as cat "$root/etc/mosgw/api-tokens"
elif [ "$(id -u)" -eq 0 ]; then
	echo "SKIP: the mosgw user cannot reach $tmp (or no setpriv): checked as root"
	skip=$((skip + 1))
fi
check "packaged mosgw -n -c /etc/mosgw/mosgw.ini (in the root${as:+, as mosgw})" \
    $as "$root/usr/sbin/mosgw" -n -c "$root/etc/mosgw/mosgw.ini"
check "packaged mosctl creates and reads a database in /var/lib/mosgw" \
    $as sh -c "'$root/usr/bin/mosctl' --db '$root/var/lib/mosgw/mosgw.db' init &&
    '$root/usr/bin/mosctl' --db '$root/var/lib/mosgw/mosgw.db' job stats"

# make install / uninstall in the copy (its programs are built already)
inst=$tmp/inst
mk() { env -u MAKEFLAGS -u MAKELEVEL make -s -C "$src" "$@" DESTDIR="$inst"; }
check "make install DESTDIR PREFIX=/opt/mosgw" mk install PREFIX=/opt/mosgw
p=$inst/opt/mosgw
check "make install: mosgw in sbin, the tools in bin, pages, configuration" \
    sh -c "test -x '$p/sbin/mosgw' && test -x '$p/bin/mosctl' &&
    test -x '$p/bin/mosmsg' && test -x '$p/bin/mosreplay' &&
    test -f '$p/share/man/man8/mosgw.8' && test -f '$p/share/man/man5/mosgw.ini.5' &&
    test -f '$p/etc/mosgw/mosgw.ini' &&
    test \"\$(stat -c %a '$p/etc/mosgw/api-tokens')\" = 600"
echo "; mine" >>"$p/etc/mosgw/mosgw.ini"
check "make install BINDIR SBINDIR SYSCONFDIR, keeping a configuration" sh -c \
    "env -u MAKEFLAGS -u MAKELEVEL make -s -C '$src' install DESTDIR='$inst' \
    PREFIX=/opt/mosgw BINDIR=/opt/b SBINDIR=/opt/s &&
    env -u MAKEFLAGS -u MAKELEVEL make -s -C '$src' install DESTDIR='$inst' \
    PREFIX=/opt/mosgw SYSCONFDIR=/opt/conf &&
    test -x '$inst/opt/b/mosctl' && test -x '$inst/opt/s/mosgw' &&
    test -f '$inst/opt/conf/mosgw/mosgw.ini' &&
    tail -n 1 '$p/etc/mosgw/mosgw.ini' | grep -qx '; mine'"
check "make uninstall: programs and pages go, the configuration stays" sh -c \
    "env -u MAKEFLAGS -u MAKELEVEL make -s -C '$src' uninstall DESTDIR='$inst' \
    PREFIX=/opt/mosgw && ! test -e '$p/sbin/mosgw' &&
    ! test -e '$p/bin/mosctl' && ! test -e '$p/share/man/man8/mosgw.8' &&
    test -f '$p/etc/mosgw/mosgw.ini'"
check "the checkout is untouched (no debian/mosgw, debian/files)" sh -c \
    "! test -e '$top/debian/mosgw' && ! test -e '$top/debian/files' &&
    ! test -e '$top/debian/.debhelper'"

finish
