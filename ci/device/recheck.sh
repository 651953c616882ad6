#!/bin/bash
# recheck.sh -- on the GPU machine: the correctness runs with device buffers
# (shared GPU, both GPUs, both data paths) after a fix. Logs to $OUT.
set -u
. "$(dirname "$0")/common.sh"
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
V=$B/test/integration/ucp_verify
for p in direct staged; do
    step ucp-$p 200 $PRE UCX_GDRPIPE_PATH=$p $V -d cuda --max 64M --realloc
    step ucp-$p-v2 200 $PRE UCX_PROTO_ENABLE=y UCX_GDRPIPE_PATH=$p $V -d cuda --max 16M
done
step ucp-before 100 $PRE $V -d cuda --alloc-before --max 16M
M=$B/test/integration/mpi_verify
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
step mpi-1gpu 200 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
step mpi-2gpu-1g 300 test/integration/run-mpi.sh $M -d cuda --max 1G --realloc
step mpi-2gpu-staged 200 env UCX_GDRPIPE_PATH=staged test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
step mpi-before 100 test/integration/run-mpi.sh $M -d cuda --alloc-before --max 16M
unset RUN_MPI_PRELOAD UCX_TLS
step static-cudart-frees 60 .device/gpu-hooks/static_cudart_frees
echo "=== failed steps: $fails"
