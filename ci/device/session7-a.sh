#!/bin/bash
# session7-a.sh -- on the GPU machine (2 x H200), repository root, .device/
# bundle and build carried: the regression at the commit that resolves issue 5
# (per-class offsets, capped settling): the CUDA correctness checks through
# UCP and MPI with THRESH=auto (the default), gdrpipe-calibrate between the
# two GPUs and host -> GPU, and the MPI latency / bandwidth of GPU buffers.
# Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
C=$B/tools/calibrate/gdrpipe-calibrate
TAIL=12 step calibrate-gpu-gpu 60 $C -a 0 -b 1 --cache-dir "$OUT/calib" --svg "$OUT/gpu-gpu.svg" -q
TAIL=12 step calibrate-host-gpu 60 $C -a host -b 0 --cache-dir "$OUT/calib" --svg "$OUT/host-gpu.svg" -q
TAIL=12 step calibrate-show 30 $C --show "$OUT"/calib/crossover-*.txt
step ucp-cuda-v1 150 $PRE $V -d cuda --max 64M
step ucp-cuda-v2 150 $PRE UCX_PROTO_ENABLE=y $V -d cuda --max 64M
step ucp-cuda-realloc 120 $PRE $V -d cuda --realloc --max 16M
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
step mpi-cuda-2gpu-1g 150 test/integration/run-mpi.sh $M -d cuda --max 1G
step mpi-cuda-1gpu 150 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
unset RUN_MPI_PRELOAD UCX_TLS
TAIL=30 step mpi-latency-cuda-auto 60 $MPIRUN $GP -x UCX_GDRPIPE_CALIB_DIR=$OUT/calib-mpi $LAT
TAIL=30 step mpi-bw-cuda-auto 60 $MPIRUN $GP -x UCX_GDRPIPE_CALIB_DIR=$OUT/calib-mpi $BW
echo "=== failed steps: $fails"
