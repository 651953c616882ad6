#!/bin/bash
# session4-i.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the proof sweeps (host memory on one side, both directions, and
# GPU <-> GPU), the per-class check's offsets now a robust fixed + per-byte
# trend; paths sampled in blocks of 4; the top of the range from the calibration. The final code; the sweep pads the environment of auto runs to the length of the others. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-gpu-host 275 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=45 step sweep-host-gpu-put 275 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
echo "=== failed steps: $fails"
