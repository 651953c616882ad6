#!/bin/bash
# session6-f.sh -- on the GPU machine, repository root, .device/ carried: the
# host-memory proof sweeps repeated on one VM (host -> GPU put three times,
# each with a fresh calibration; GPU -> host twice): how often does each pass?
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
for i in 1 2 3; do
    TAIL=26 step sweep-host-gpu-put-$i 150 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu-$i" "$B"
done
for i in 1 2; do
    TAIL=26 step sweep-gpu-host-$i 150 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host-$i" "$B"
done
echo "=== failed steps: $fails"
