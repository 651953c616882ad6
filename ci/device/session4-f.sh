#!/bin/bash
# session4-f.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the check through the peer taking the paths in blocks of 4 instead
# of alternating per transfer; per-transfer samples at 16/32 KiB (host -> GPU
# puts), then the proof sweeps with host memory on one side. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
echo "=== auto-debug (16K,32K x 20, puts)"
env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_THRESH=auto UCX_RNDV_SCHEME=put_zcopy UCX_GDRPIPE_PATH=auto \
    UCX_GDRPIPE_CALIB_DIR=$OUT/e1 UCX_LOG_LEVEL=debug \
    timeout 120 $B/bench/gdrpipe_ucp_sweep -d cuda,host -T -S 16K,32K -i 20 -x 2 > "$OUT/auto-debug.log" 2>&1
grep -E "^[0-9]" "$OUT/auto-debug.log"
grep -o "crossover check for .*" "$OUT/auto-debug.log" | sed 's/.*: //' | paste -sd' ' | fold -w 200
TAIL=45 step sweep-gpu-host 275 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=45 step sweep-host-gpu-put 275 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
rm -rf "$OUT/e1"
echo "=== failed steps: $fails"
