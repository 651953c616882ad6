#!/bin/bash
# v2check.sh -- on the GPU machine: protocol v2 (UCX_PROTO_ENABLE=y) with device
# buffers through each data path, then v1 once more. Logs to $OUT.
set -u
. "$(dirname "$0")/common.sh"
for p in direct staged; do
    for v in y n; do
        timeout 150 env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_PROTO_ENABLE=$v UCX_GDRPIPE_PATH=$p \
            $B/test/integration/ucp_verify -d cuda --max 64M --realloc > "$OUT/v2-$p-$v.log" 2>&1
        echo "=== ucp $p proto=$v rc=$? | $(tail -1 "$OUT/v2-$p-$v.log")"
        grep FAIL "$OUT/v2-$p-$v.log" | head -2
    done
done
