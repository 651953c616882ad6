#!/bin/bash
# session7-c.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the rendezvous threshold after the wire's bandwidth became
# "dedicated" (run 42 found 16 and 32 KiB device messages sent eagerly under
# MPI: UCP's threshold was 47 KB with 2 ranks on this Intel host). The
# threshold test, MPI latency and bandwidth of device and host buffers (host
# bandwidth also with the old threshold pinned, UCX_RNDV_THRESH=47522, for
# comparison: MPI_Isend uses that threshold), and mpi_verify.
set -u
. "$(dirname "$0")/common.sh"
T=$B/test/plugin/rndv_thresh
for ppn in 2 8; do env LD_PRELOAD=$P UCX_TLS=gdrpipe,self $T $ppn 16384 2>/dev/null; done
export UCX_GDRPIPE_CALIB_DIR=$OUT/calib
TAIL=30 step lat-cuda 60 $MPIRUN $GP $B/bench/gdrpipe_latency -d cuda -i 1000 -x 100 -m 1:4194304 D D
TAIL=20 step bw-cuda 60 $MPIRUN $GP $B/bench/gdrpipe_bw -d cuda -i 100 -x 10 -m 4096:4194304 D D
TAIL=20 step lat-host 60 $MPIRUN $GP $B/bench/gdrpipe_latency -d host -i 1000 -x 100 -m 1024:1048576
TAIL=20 step bw-host 60 $MPIRUN $GP $B/bench/gdrpipe_bw -d host -i 100 -x 10 -m 4096:1048576
TAIL=20 step bw-host-old-thresh 60 $MPIRUN $GP -x UCX_RNDV_THRESH=47522 $B/bench/gdrpipe_bw -d host -i 100 -x 10 -m 4096:1048576
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
step mpi-verify-cuda 120 test/integration/run-mpi.sh $M -d cuda --max 16M
step mpi-verify-host 120 test/integration/run-mpi.sh $M -d host --max 16M
echo "=== failed steps: $fails"
