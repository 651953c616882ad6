#!/bin/bash
# paths.sh -- on the GPU machine: the direct and staged data paths through
# UCP/MPI with device buffers (correctness, then benchmarks). Logs to $OUT.
set -u
. "$(dirname "$0")/common.sh"
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
V=$B/test/integration/ucp_verify
for p in direct staged; do
    step ucp-$p 200 $PRE UCX_GDRPIPE_PATH=$p $V -d cuda --max 64M --realloc
done
M=$B/test/integration/mpi_verify
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
TAIL=8 step mpi-1gpu 200 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
step mpi-2gpu-staged 200 env UCX_GDRPIPE_PATH=staged test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
unset RUN_MPI_PRELOAD UCX_TLS
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx --mca btl ^vader,tcp,openib,uct --bind-to core"
GP="-x LD_PRELOAD=$P -x UCX_TLS=gdrpipe,self"
TAIL=30
for p in auto staged; do
    step lat-$p 90 $MPIRUN $GP -x UCX_GDRPIPE_PATH=$p $B/bench/gdrpipe_latency -d cuda -m 1:4194304 -i 1000 -x 100 D D
    step bw-$p 120 $MPIRUN $GP -x UCX_GDRPIPE_PATH=$p $B/bench/gdrpipe_bw -d cuda -m 1:67108864 -i 20 -x 3 D D
    step bibw-$p 120 $MPIRUN $GP -x UCX_GDRPIPE_PATH=$p $B/bench/gdrpipe_bibw -d cuda -m 65536:67108864 -i 20 -x 3 D D
done
echo "=== failed steps: $fails"
