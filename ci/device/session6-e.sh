#!/bin/bash
# session6-e.sh -- on the GPU machine, repository root, .device/ carried: the
# host -> GPU put at 64 KiB costs the direct path ~5 us more in the proof
# sweep (sizes 1 B .. 64 MiB in x4 steps, 20 iterations) than in run 32's
# fine sweep (50 iterations, 61440 B before it). Which of the two makes it?
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
PUTSW="env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --no-around --reps 3 --bound 100 --calib-dir $OUT/calib-put"
TAIL=8 step a-16k-64k-iters20 90 $PUTSW --sizes 16384,65536,105797 --iters 20 "$B"
TAIL=15 step b-x4-iters20 90 $PUTSW --sizes 1,4,16,64,256,1024,4096,16384,65536,262144 --iters 20 "$B"
TAIL=15 step c-x4-iters50 90 $PUTSW --sizes 1,4,16,64,256,1024,4096,16384,65536,262144 --iters 50 "$B"
TAIL=15 step d-x4-iters20-settle16k 90 $PUTSW --sizes 16384,65536,262144 --iters 20 "$B"
echo "=== failed steps: $fails"
