#!/bin/bash
# session3-e.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the proof sweeps with host memory on one side, both directions of
# data (get: GPU -> host, put: host -> GPU), pinned ranks. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=30 step sweep-host-gpu-put 200 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=30 step sweep-gpu-host 200 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-host" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
echo "=== failed steps: $fails"
