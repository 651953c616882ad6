#!/bin/bash
# session3-c.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the end-of-session tree. The staged path on the shared chunk
# pipeline, the RDMA engine's copies and the pool path on the real driver;
# the measured crossover checked through the peer, proved by the sweeps
# (GPU <-> GPU, GPU -> host, host -> GPU); the benchmarks with the new
# defaults. Logs and files in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
TAIL=4 step chunk-pipe-unit 60 env UCX_GDRPIPE_CUDA_LIB=$REAL GDRPIPE_SIM_DEVICES=2 "$B/test/unit/pipeline/test_chunk_pipe"
TAIL=4 step pipeline-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline"
TAIL=4 step rdma-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/rdma/unit_rdma"
TAIL=4 step ucp-staged 120 $PRE UCX_GDRPIPE_PATH=staged $V -d cuda --max 64M --realloc
TAIL=4 step ucp-auto-pool 120 $PRE $V -d cuda --cuda-alloc pool --max 64M --realloc
TAIL=4 step mpi-staged-put 150 env RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=staged UCX_RNDV_SCHEME=put_zcopy test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
TAIL=4 step mpi-auto 150 env RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
# the proof sweeps, each with a fresh cache: calibration, check through the peer, sweep
TAIL=30 step sweep-gpu-host 200 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=30 step sweep-host-gpu-put 200 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 3 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=30 step sweep-gpu-gpu 200 bench/sweep_paths.sh --iters 20 --reps 3 --calib-dir "$OUT/calib-gpu-gpu" "$B"
grep -h "^online\|^threshold\|^below\|^key.local_gpu\|^key.remote_gpu" "$OUT"/calib-*/crossover-*.txt
TAIL=16 step cache-bench 60 "$B/bench/cache/cache_bench"
TAIL=16 step hotpath 60 "$B/bench/gdrpipe_hotpath_bench" 20000
TAIL=25 step lat-default 90 $MPIRUN $GP $LAT
TAIL=25 step lat-rndv0 90 $MPIRUN $GP -x UCX_RNDV_THRESH=0 $LAT
TAIL=13 step bw-get 90 $MPIRUN $GP $BW
TAIL=13 step bw-put 90 $MPIRUN $GP $PUT $BW
TAIL=13 step bibw-put 90 $MPIRUN $GP $PUT $BIBW
TAIL=13 step bw-staged-put 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BW
TAIL=13 step bibw-staged-put 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BIBW
TAIL=13 step bibw-staged-put-4mx8 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged -x UCX_GDRPIPE_CHUNK_SIZE=4m -x UCX_GDRPIPE_PIPELINE_DEPTH=8 $BIBW
TAIL=13 step bibw-staged-put-1mx8 90 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged -x UCX_GDRPIPE_CHUNK_SIZE=1m -x UCX_GDRPIPE_PIPELINE_DEPTH=8 $BIBW
echo "=== failed steps: $fails"
