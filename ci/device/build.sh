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
ucx_src=${UCX_SRC:-$PWD/subprojects/ucx-src/ucx-1.13.1}
[ -d .device/build ] || meson setup .device/build --buildtype=release -Ducx_src="$ucx_src"
meson compile -C .device/build
bash test/gpu/hooks/build.sh .device/gpu-hooks >/dev/null
du -sh .device --exclude=bundle/debs
