#!/bin/sh
# Builds test/gpu/hooks/static_cudart_frees (static cudart) with the hook
# sources compiled in. Usage: test/gpu/hooks/build.sh [OUTDIR]  (default: build-gpu-hooks)
# Needs /usr/local/cuda/bin/nvcc (override with NVCC=...) and g++ with C++20.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-"$root/build-gpu-hooks"}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
arch=${ARCH:-sm_90}
mkdir -p "$out"
objs=""
for src in "$root"/src/hooks/*.cc "$root"/src/util/log.cc; do
    obj="$out/$(basename "$src" .cc).o"
    g++ -std=c++20 -O2 -g -Wall -Wextra -D_GNU_SOURCE -I"$root/include" \
        -isystem /usr/local/cuda/include -c "$src" -o "$obj"
    objs="$objs $obj"
done
"$nvcc" -std=c++17 -O2 -g -arch="$arch" -cudart static -I"$root/include" \
    -o "$out/static_cudart_frees" "$here/static_cudart_frees.cu" $objs -ldl -lpthread
echo "built $out/static_cudart_frees"
