#!/bin/bash
# session6-b.sh -- the two host-memory proof sweeps of session6-a.sh again,
# with time limits that fit the slower VM of run 29 (both ran past 110 s
# there, one while re-measuring). Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-gpu-host 290 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=45 step sweep-host-gpu-put 290 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
echo "=== failed steps: $fails"
