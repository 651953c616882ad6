#!/bin/bash
# session3-b.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: after the session-3 changes (pool imports closed per transfer,
# synchronous copies that wait for the data, lock-free cache hits, the
# staged-below rule, one chunk pipeline for both wires): correctness, the
# physical reference, the benchmarks and the GPU <-> host proof sweep.
# Logs and files in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
# correctness first
TAIL=6 step pool-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline" "[pool]"
TAIL=4 step pool-direct-default 120 $PRE UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh direct $V -d cuda --cuda-alloc pool --max 64M --realloc
TAIL=4 step pool-default-staged 60 $PRE UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh fallback $V -d cuda --cuda-alloc async --max 16M --realloc
TAIL=4 step ucp-direct 120 $PRE UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh direct $V -d cuda --max 64M --realloc
TAIL=4 step ucp-staged 120 $PRE UCX_GDRPIPE_PATH=staged $V -d cuda --max 64M --realloc
TAIL=4 step ucp-vmm-direct 120 $PRE UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh direct $V -d cuda --cuda-alloc vmm --max 16M --realloc
TAIL=4 step mpi-2gpu 150 env RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
TAIL=4 step mpi-2gpu-put 150 env RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_RNDV_SCHEME=put_zcopy test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
# numbers
TAIL=40 step physref 150 "$B/bench/gdrpipe_physref" -i 500
TAIL=20 step hotpath 60 "$B/bench/gdrpipe_hotpath_bench" 20000
TAIL=16 step cache-bench 60 "$B/bench/cache/cache_bench"
TAIL=25 step lat-default 90 $MPIRUN $GP $LAT
TAIL=25 step lat-rndv0 90 $MPIRUN $GP -x UCX_RNDV_THRESH=0 $LAT
TAIL=25 step lat-rndv0-async 90 $MPIRUN $GP -x UCX_RNDV_THRESH=0 -x UCX_GDRPIPE_SYNC_COPY_MAX=0 $LAT
TAIL=13 step bw-get 90 $MPIRUN $GP $BW
TAIL=13 step bw-put 90 $MPIRUN $GP $PUT $BW
TAIL=13 step bibw-put 90 $MPIRUN $GP $PUT $BIBW
TAIL=13 step bw-staged-put 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BW
TAIL=13 step bibw-staged-put 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BIBW
# the measured crossover with pageable host memory on one side, through the plugin
TAIL=30 step sweep-gpu-host 240 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-host" "$B"
echo "=== failed steps: $fails"
