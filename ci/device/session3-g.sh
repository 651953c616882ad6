#!/bin/bash
# session3-g.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the proof sweeps with host memory on one side again (the check sampling from 4 KiB), with more
# runs per mode (--reps 5) against the run-to-run spread. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=40 step sweep-gpu-host 280 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=40 step sweep-host-gpu-put 280 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=22 step sweep-gpu-gpu 200 bench/sweep_paths.sh --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-gpu" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
echo "=== failed steps: $fails"
