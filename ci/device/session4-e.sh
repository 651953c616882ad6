#!/bin/bash
# session4-e.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: host -> GPU puts of 16 KiB are ~100 us while the check samples
# them (session4-d), 20-28 us otherwise. Per-transfer samples (debug log),
# forced paths, and the check with more iterations.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
S=$B/bench/gdrpipe_ucp_sweep
run_() {
    local name=$1 dir=$2 sizes=$3 iters=$4; shift 4
    echo "=== $name ($sizes x $iters)"
    env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_THRESH=auto UCX_RNDV_SCHEME=put_zcopy \
        UCX_GDRPIPE_CALIB_DIR=$dir UCX_GDRPIPE_CALIB_BUDGET=0.5s "$@" \
        timeout 120 $S -d cuda,host -T -S "$sizes" -i "$iters" -x 2 > "$OUT/$name.log" 2>&1
    grep -E "^[0-9]" "$OUT/$name.log"
    grep -o "crossover check for .*" "$OUT/$name.log" | head -40
}
run_ direct "$OUT/d1" 16K,32K 20 UCX_GDRPIPE_PATH=direct
run_ staged "$OUT/d2" 16K,32K 20 UCX_GDRPIPE_PATH=staged
run_ auto-debug "$OUT/d3" 16K,32K 20 UCX_GDRPIPE_PATH=auto UCX_LOG_LEVEL=debug
run_ auto-100 "$OUT/d4" 16K 100 UCX_GDRPIPE_PATH=auto
run_ auto-8k-first "$OUT/d5" 8K,16K 20 UCX_GDRPIPE_PATH=auto UCX_LOG_LEVEL=debug
run_ auto-pinned-off "$OUT/d6" 16K,32K 20 UCX_GDRPIPE_PATH=auto UCX_LOG_LEVEL=debug GP_SWEEP_CPUS=
echo "=== failed steps: $fails"
