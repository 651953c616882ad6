#!/bin/bash
# install-deps.sh -- the Debian packages gdrpipe builds and tests with. Needs
# root. (UCX's internals that the plugin uses are declared in plugin/ucx/:
# no UCX source is needed.)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
    build-essential g++ pkg-config meson ninja-build \
    libucx-dev libucx0 ucx-utils \
    openmpi-bin libopenmpi-dev \
    catch2 \
    libibverbs-dev ibverbs-providers rdma-core \
    valgrind dpkg-dev procps iproute2 util-linux ca-certificates xz-utils
if [ ! -f /usr/local/cuda/include/cuda.h ]; then
    echo "install-deps: /usr/local/cuda/include/cuda.h is missing: install the CUDA" \
         "toolkit headers (gdrpipe compiles against cuda.h; libcuda is loaded at run time)" >&2
    exit 1
fi
