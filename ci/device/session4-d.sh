#!/bin/bash
# session4-d.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: why the first size class checked for host -> GPU puts comes out
# ~140 us high on both paths (runs 18-20). Each case runs the check through
# the peer in a fresh process and prints what each class measured.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
S=$B/bench/gdrpipe_ucp_sweep
# case NAME CACHE SIZES [ENV...]: one two-rank run, the check's log lines
case_() {
    local name=$1 dir=$2 sizes=$3; shift 3
    echo "=== $name ($sizes)"
    env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=auto UCX_GDRPIPE_THRESH=auto UCX_LOG_LEVEL=info \
        UCX_GDRPIPE_CALIB_DIR=$dir UCX_GDRPIPE_CALIB_BUDGET=0.5s "$@" \
        timeout 120 $S -d cuda,host -T -S "$sizes" -i 20 -x 2 2>&1 |
        grep -E "checked through the peer|measured now|from cache|^[0-9]" | sed 's/.*crossover for/crossover for/' | cut -c1-420
}
PUTS="UCX_RNDV_SCHEME=put_zcopy"
case_ put-fresh "$OUT/c1" 16K,32K,64K,128K $PUTS
case_ put-fresh-from-32k "$OUT/c2" 32K,64K,128K,16K $PUTS
# calibration only first (no check), then the check in a process that did not calibrate
case_ put-calib-only "$OUT/c3" 1M $PUTS UCX_GDRPIPE_CALIB_ONLINE=0
case_ put-check-after-cache "$OUT/c3" 16K,32K,64K,128K $PUTS
# warm the pair with transfers of another size first
case_ put-warm-first "$OUT/c4" 256K,256K,16K,32K,64K $PUTS
case_ get-fresh "$OUT/c5" 16K,32K,64K,128K
echo "=== failed steps: $fails"
