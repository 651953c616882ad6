#!/bin/bash
# session3-d.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the pipeline unit tests on the real driver (simulator-model tests
# skip themselves), and the proof sweeps with pinned ranks (GP_SWEEP_CPUS),
# GPU <-> host with and without the check through the peer. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
TAIL=4 step pipeline-unit 150 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline"
TAIL=4 step chunk-pipe-unit 60 env UCX_GDRPIPE_CUDA_LIB=$REAL GDRPIPE_SIM_DEVICES=2 "$B/test/unit/pipeline/test_chunk_pipe"
export GP_SWEEP_CPUS=2,3
TAIL=22 step sweep-gpu-gpu 200 bench/sweep_paths.sh --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-gpu" "$B"
TAIL=30 step sweep-gpu-host 200 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=30 step sweep-gpu-host-nocheck 200 env UCX_GDRPIPE_CALIB_ONLINE=0 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-host-nocheck" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
echo "=== failed steps: $fails"
