#!/bin/bash
# session4-b.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the proof sweeps (host memory on one side, both directions, and
# GPU <-> GPU), the per-class check's offsets now a robust fixed + per-byte
# trend. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-gpu-host 275 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=45 step sweep-host-gpu-put 275 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=22 step sweep-gpu-gpu 200 bench/sweep_paths.sh --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-gpu" "$B"
# which transfers reach the engine at 1-16 KiB, GPU memory against host memory
for mode in direct staged; do
    echo "=== eager probe PATH=$mode"
    LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=$mode UCX_GDRPIPE_STATS=y UCX_LOG_LEVEL=info \
        timeout 60 $B/bench/gdrpipe_ucp_sweep -d cuda,host -T -S 1K,4K,8K,16K -i 200 -x 5 2>&1 |
        grep -E "^[0-9]|xfer:|ep_cfg|rndv" | cut -c1-220 | head -20
done
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
echo "=== failed steps: $fails"
