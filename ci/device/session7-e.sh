#!/bin/bash
# session7-e.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: run 44 showed MPI ping-pongs between a GPU buffer and a host
# buffer at 50-92 us for 64-128 KiB (53 us at 256 KiB): the host rank's
# MPI_Send goes eagerly below UCP's RNDV_SEND_NBR_THRESH (256 KiB), and the
# GPU rank unpacks each 8 KiB fragment with its own host -> device copy. The
# same with that threshold lowered, and its cost for host <-> host ping-pongs.
set -u
. "$(dirname "$0")/common.sh"
export UCX_GDRPIPE_CALIB_DIR=$OUT/calib
L="$B/bench/gdrpipe_latency -i 1000 -x 100 -m 4096:524288"
for t in default 8240 32k; do
    e=
    [ "$t" = default ] || e="-x UCX_RNDV_SEND_NBR_THRESH=$t"
    TAIL=10 step lat-HD-$t 60 $MPIRUN $GP $e $L -d cuda H D
    TAIL=10 step lat-HH-$t 60 $MPIRUN $GP $e $L -d host
done
echo "=== failed steps: $fails"
