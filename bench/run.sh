#!/bin/sh
# make bench: every benchmark part, each printing its figures beside its peer.
set -eu
cd "$MOSGW_TOP"
for part in codec queue gateway ro search api watch; do
	echo "==== bench: $part"
	sh "bench/$part.sh"
done
