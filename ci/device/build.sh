#!/bin/bash
# build.sh -- on Debian 12: build everything the GPU machine runs into
# .device/ (ignored by git, carried to the GPU machine): the Debian Open MPI /
# UCX bundle (shared/device/mkbundle.sh), a release build of gdrpipe with its
# tests and benchmarks, and the static-cudart hook check.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device
if [ ! -f .device/bundle/env.sh ]; then
    bash ../shared/device/mkbundle.sh .device/bundle && rm -rf .device/bundle/debs
fi
[ -d .device/build ] || meson setup .device/build --buildtype=release
meson compile -C .device/build
bash test/gpu/hooks/build.sh .device/gpu-hooks >/dev/null
# .device/run: the build's programs and libraries without its objects (what is
# carried to the GPU machine; DEVICE_BUILD=.device/run for ci/device/*.sh)
rm -rf .device/run
(cd .device/build && find . -path ./meson-private -prune -o -path ./meson-logs -prune -o \
    -name '*.p' -prune -o -type f \( -perm -u+x -o -name '*.so*' \) -print) |
    while read -r f; do mkdir -p ".device/run/$(dirname "$f")" && cp -p ".device/build/$f" ".device/run/$f"; done
cp -p .device/build/plugin/gdrpipe-run .device/run/plugin/
strip --strip-debug .device/run/*/*.so* .device/run/*/*/*.so* 2>/dev/null || true
du -sh .device/run .device/bundle .device --exclude=bundle/debs
