#!/bin/bash
# v2check.sh -- on the GPU machine: protocol v2 (UCX_PROTO_ENABLE=y) with device
# buffers through each data path, then v1 once more. Logs to $OUT.
set -u
. .device/bundle/env.sh
B=$PWD/.device/build
P=$B/plugin/libuct_gdrpipe.so
OUT=${OUT:-/tmp/gdrpipe-out}
mkdir -p "$OUT"
export UCX_WARN_UNUSED_ENV_VARS=n
for p in direct staged; do
    for v in y n; do
        timeout 150 env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_PROTO_ENABLE=$v UCX_GDRPIPE_PATH=$p \
            $B/test/integration/ucp_verify -d cuda --max 64M --realloc > "$OUT/v2-$p-$v.log" 2>&1
        echo "=== ucp $p proto=$v rc=$? | $(tail -1 "$OUT/v2-$p-$v.log")"
        grep FAIL "$OUT/v2-$p-$v.log" | head -2
    done
done
