#!/bin/sh
# ucx-src-version.sh DIR -- print the UCX version a source tree declares in configure.ac
sed -n 's/^define(\[ucx_ver_\(major\|minor\|patch\)\], *\([0-9]*\)).*/\2/p' "$1/configure.ac" | paste -sd.
