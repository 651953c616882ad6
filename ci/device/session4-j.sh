#!/bin/bash
# session4-j.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the host-memory proof sweeps with the three modes timed side by
# side in the same processes (gdrpipe_ucp_sweep -M), then GPU <-> GPU (added
# after run 28, for the next session). Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-host-gpu-put 110 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=45 step sweep-gpu-host 110 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=22 step sweep-gpu-gpu 150 bench/sweep_paths.sh --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-gpu" "$B"
echo "=== failed steps: $fails"
