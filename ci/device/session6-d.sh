#!/bin/bash
# session6-d.sh -- on the GPU machine, repository root, .device/ carried: how
# wide is the host -> GPU put window around 64 KiB where the staged path beat
# the direct one in runs 28-31? Fine sizes from 32 KiB to 128 KiB, both host
# directions, the three modes side by side. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
S=16384,32768,40960,49152,57344,61440,65535,65536,65537,69632,73728,81920,98304,131072,196608
TAIL=22 step fine-host-gpu-put 120 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --sizes $S --no-around --iters 50 --reps 3 --bound 100 --calib-dir "$OUT/calib-put" "$B"
TAIL=22 step fine-gpu-host 120 bench/sweep_paths.sh --mem cuda,host --sizes $S --no-around --iters 50 --reps 3 --bound 100 --calib-dir "$OUT/calib-get" "$B"
echo "=== failed steps: $fails"
