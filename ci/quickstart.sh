#!/bin/bash
# quickstart.sh -- on a fresh Debian 12 machine (as root): install the
# dependencies, build and install gdrpipe into ./_install,
# then run the main job: latency and bandwidth between 2 ranks through
# gdrpipe, on GPU buffers when a GPU is present, host buffers otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then
    bash ci/install-deps.sh
else
    echo "quickstart: not root, skipping apt-get (run ci/install-deps.sh as root first)"
fi
prefix=$PWD/_install
meson setup build-release --buildtype=release --prefix="$prefix" -Dtests=false \
    >/dev/null 2>&1 || meson setup --reconfigure build-release --buildtype=release \
    --prefix="$prefix" -Dtests=false
meson compile -C build-release
meson install -C build-release >/dev/null
echo "quickstart: installed into $prefix"

mem=host
if "$prefix/bin/gdrpipe-info" --cuda-available >/dev/null 2>&1; then
    mem=cuda
fi
echo "quickstart: $mem buffers"
run=("$prefix/bin/gdrpipe-run" mpirun --allow-run-as-root --oversubscribe -np 2)
args=(-d "$mem")
[ "$mem" = cuda ] && args+=(D D)
"${run[@]}" "$prefix/bin/gdrpipe_latency" "${args[@]}" -m 1:4194304
"${run[@]}" "$prefix/bin/gdrpipe_bw" "${args[@]}" -m 1:67108864
