#!/bin/bash
# fetch-ucx-source.sh DEST -- unpack Debian's source of the *installed* libucx0
# into DEST/ucx-<version>/ so that the plugin can compile against UCX's internal
# headers (uct/base, internal ucs). Nothing of UCX is committed to this repository.
#
# Needs apt-get (a deb-src entry is added when none exists) and dpkg-dev.
set -euo pipefail
dest=${1:?usage: fetch-ucx-source.sh DEST}
# the source package's version: a binary rebuild (binNMU, "+bN") has none of
# its own (Debian 13's libucx0 is 1.18.1+ds-2+b1, from source 1.18.1+ds-2)
ver=$(dpkg-query -W -f='${source:Version}' libucx0 2>/dev/null || true)
[ -n "$ver" ] || { echo "fetch-ucx-source: libucx0 is not installed" >&2; exit 1; }
# the upstream release, as pkg-config reports it: no epoch, Debian revision or
# repack suffix ("+ds")
upstream=${ver%-*}; upstream=${upstream#*:}; upstream=${upstream%%+*}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [ -f "$dest/ucx-$upstream/src/uct/base/uct_iface.h" ]; then
    echo "fetch-ucx-source: $dest/ucx-$upstream already present"; exit 0
fi
# a deb-src entry for the configured Debian archive, if there is none yet
if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    src=/etc/apt/sources.list.d/debian.sources
    if [ -f "$src" ]; then
        sed 's/^Types: deb$/Types: deb-src/' "$src" > /etc/apt/sources.list.d/gdrpipe-deb-src.sources
    else
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/gdrpipe-deb-src.list
    fi
    apt-get update -q
fi
cd "$dest"
apt-get source -q --download-only "ucx=$ver"
dpkg-source -x --skip-debianization "ucx_${ver#*:}.dsc" "ucx-$upstream" >/dev/null 2>&1 || \
    dpkg-source -x "ucx_${ver#*:}.dsc" "ucx-$upstream"
test -f "$dest/ucx-$upstream/src/uct/base/uct_iface.h"
echo "fetch-ucx-source: UCX $ver source in $dest/ucx-$upstream"
