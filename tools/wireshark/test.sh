#!/bin/sh
# The MOS dissector (tools/wireshark/mos.lua) under Debian's tshark, on the
# loopback capture fixtures/pcap/mos-loopback.pcapng (a real exchange with
# mosgw: UTF-16BE and UTF-8 streams, a heartbeat sent one byte per segment,
# three messages in one segment). Ends with "N passed, N failed[, N skipped]".
set -u

top=${MOSGW_TOP:-.}
lua=$top/tools/wireshark/mos.lua
pcap=$top/fixtures/pcap/mos-loopback.pcapng

if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark is not installed (tools/deps.sh installs it: apt-get install tshark)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

tmp=$(mktemp -d "${MOSGW_TMP:-/tmp}/wireshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$top/tools/testlib.sh"

timeout 120 tshark -2 -X lua_script:"$lua" -r "$pcap" -Y mos -T fields \
    -E separator=/t -e frame.number -e tcp.stream -e mos.port \
    -e mos.encoding -e mos.type -e mos.mosid -e mos.ncsid -e mos.messageid \
    -e mos.request_in -e mos.response_in >"$tmp/out" 2>"$tmp/err"
rc=$?
tab=$(printf '\t')
has() {
	grep -qxF "$(printf '%s' "$1" | sed "s/|/$tab/g")" "$tmp/out"
}

check "tshark runs the dissector without a Lua error" \
    sh -c "[ $rc -eq 0 ] && ! grep -qi 'lua.*error' '$tmp/err'"
# every message of the capture, once (20: as many as mosreplay import finds)
check "20 MOS messages" sh -c "[ \$(cut -f5 '$tmp/out' | tr ',' '\n' | grep -c .) -eq 20 ]"
check "type, mosID, ncsID, messageID of a heartbeat; paired with frame 6" \
    has "4|0|lower|UTF-16BE|heartbeat|mosgw.conformance|NCS.CONFORMANCE|138893731||6"
check "the reply names its request" \
    has "6|0|lower|UTF-16BE|heartbeat|mosgw.conformance|NCS.CONFORMANCE|138893731|4|"
check "reqMachInfo on the upper port paired with its listMachInfo" \
    has "18|1|upper|UTF-16BE|listMachInfo|mosgw.conformance|NCS.CONFORMANCE|138893897|16|"
check "a heartbeat sent one byte per segment is one message" \
    has "684|2|lower|UTF-16BE|heartbeat|mosgw.conformance|NCS.CONFORMANCE|138894030||686"
check "three messages in one segment, each paired" \
    has "704|4|lower,lower,lower|UTF-16BE,UTF-16BE,UTF-16BE|heartbeat,reqMachInfo,heartbeat|mosgw.conformance,mosgw.conformance,mosgw.conformance|NCS.CONFORMANCE,NCS.CONFORMANCE,NCS.CONFORMANCE|138894423,138894424,138894425||706,708,710"
check "a UTF-8 stream is read as UTF-8" \
    has "728|6|upper|UTF-8|heartbeat|mosgw.conformance|NCS.CONFORMANCE|138894735||730"
check "a mosReqObj answered with a mosAck NACK" \
    has "720|5|lower|UTF-16BE|mosAck|mosgw.conformance|NCS.CONFORMANCE|138894579|718|"

if [ "$fail" -ne 0 ]; then
	echo "---- tshark output"
	cat "$tmp/out" "$tmp/err"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
