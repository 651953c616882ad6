#!/bin/bash
# session6-c.sh -- on the GPU machine (2 x H200), repository root, .device/
# bundle, build and gpu-hooks carried: the free-call interception checks on
# the real driver after the split of src/hooks (session 5), the plugin's
# memory domain after its attribute helper, and the host -> GPU put sweep once
# more (its 64 KiB point sat at the bound in run 30). Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
step static-cudart-frees 60 .device/gpu-hooks/static_cudart_frees
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
TAIL=4 step ucp-cuda-realloc 90 $PRE $V -d cuda --realloc --max 16M
TAIL=4 step ucp-cuda-before 90 $PRE $V -d cuda --alloc-before --max 16M
TAIL=4 step ucp-cuda-memtest 60 $PRE $V -d cuda --memtest-crash
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
TAIL=4 step mpi-cuda-2gpu-1g 150 test/integration/run-mpi.sh $M -d cuda --max 1G
TAIL=4 step mpi-cuda-1gpu 120 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
TAIL=4 step mpi-cuda-before 90 test/integration/run-mpi.sh $M -d cuda --alloc-before --max 16M
unset RUN_MPI_PRELOAD UCX_TLS
TAIL=12 step cache-bench 60 $B/bench/cache/cache_bench
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-host-gpu-put 150 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
echo "=== failed steps: $fails"
