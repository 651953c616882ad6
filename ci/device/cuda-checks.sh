#!/bin/bash
# cuda-checks.sh -- run on the GPU machine (2 x H200) from the repository root
# with .device/ carried: the CUDA correctness checks of gdrpipe and the
# benchmarks recorded in bench/RESULTS.md. Logs go to $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
ucx_info -v | head -1
step info 30 "$B/tools/gdrpipe-info"
step static-cudart-frees 60 .device/gpu-hooks/static_cudart_frees
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
V=$B/test/integration/ucp_verify
step ucp-cuda-v1 300 $PRE $V -d cuda --max 64M
step ucp-cuda-v2 300 $PRE UCX_PROTO_ENABLE=y $V -d cuda --max 64M
step ucp-cuda-realloc 200 $PRE $V -d cuda --realloc --max 16M
step ucp-cuda-before 200 $PRE $V -d cuda --alloc-before --max 16M
step ucp-cuda-memtest 60 $PRE $V -d cuda --memtest-crash
M=$B/test/integration/mpi_verify
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
step mpi-cuda-2gpu-1g 240 test/integration/run-mpi.sh $M -d cuda --max 1G
step mpi-cuda-1gpu 300 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
step mpi-cuda-before 300 test/integration/run-mpi.sh $M -d cuda --alloc-before --max 16M
unset RUN_MPI_PRELOAD UCX_TLS
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx --mca btl ^vader,tcp,openib,uct --bind-to core"
GP="-x LD_PRELOAD=$P -x UCX_TLS=gdrpipe,self"
SM="-x UCX_TLS=posix,cma,self"
TAIL=30
step bench-latency-host-gdrpipe 60 $MPIRUN $GP $B/bench/gdrpipe_latency -d host -m 1:4194304 -i 2000 -x 200
step bench-latency-host-sm 60 $MPIRUN $SM $B/bench/gdrpipe_latency -d host -m 1:4194304 -i 2000 -x 200
step bench-bw-host-gdrpipe 90 $MPIRUN $GP $B/bench/gdrpipe_bw -d host -m 1:16777216 -i 30 -x 5
step bench-bw-host-sm 90 $MPIRUN $SM $B/bench/gdrpipe_bw -d host -m 1:16777216 -i 30 -x 5
step bench-bibw-host-gdrpipe 90 $MPIRUN $GP $B/bench/gdrpipe_bibw -d host -m 1:16777216 -i 30 -x 5
step bench-bibw-host-sm 90 $MPIRUN $SM $B/bench/gdrpipe_bibw -d host -m 1:16777216 -i 30 -x 5
step bench-latency-cuda-gdrpipe 90 $MPIRUN $GP $B/bench/gdrpipe_latency -d cuda -m 1:4194304 -i 500 -x 50 D D
step bench-bw-cuda-gdrpipe 120 $MPIRUN $GP $B/bench/gdrpipe_bw -d cuda -m 1:67108864 -i 10 -x 2 D D
step cache-bench 60 $B/bench/cache/cache_bench
echo "=== failed steps: $fails"
