#!/bin/bash
# session2-bench.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the physical reference and the benchmarks of bench/RESULTS.md, in
# one run. Logs in $OUT (steps.log has every table).
set -u
. "$(dirname "$0")/common.sh"
TAIL=40 step physref 240 "$B/bench/gdrpipe_physref" -i 1000
TAIL=20 step hotpath 60 "$B/bench/gdrpipe_hotpath_bench" 20000
TAIL=14 step cache-bench 60 "$B/bench/cache/cache_bench"
TAIL=25 step lat-default 120 $MPIRUN $GP $LAT
TAIL=25 step lat-rndv0 120 $MPIRUN $GP -x UCX_RNDV_THRESH=0 $LAT
TAIL=25 step lat-v2 120 $MPIRUN $GP -x UCX_PROTO_ENABLE=y $LAT
TAIL=13 step bw-get 120 $MPIRUN $GP $BW
TAIL=13 step bw-put 120 $MPIRUN $GP $PUT $BW
TAIL=13 step bibw-get 120 $MPIRUN $GP $BIBW
TAIL=13 step bibw-put 120 $MPIRUN $GP $PUT $BIBW
TAIL=13 step bw-staged-put 120 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BW
TAIL=13 step bibw-staged-put 120 $MPIRUN $GP $PUT -x UCX_GDRPIPE_PATH=staged $BIBW
TAIL=13 step bibw-staged-get 120 $MPIRUN $GP -x UCX_GDRPIPE_PATH=staged $BIBW
SM="-x UCX_TLS=posix,cma,self"
TAIL=8 step lat-host-gdrpipe-put 60 $MPIRUN $GP $PUT $B/bench/gdrpipe_latency -d host -m 1:64K -i 2000 -x 200
TAIL=8 step lat-host-sm 60 $MPIRUN $SM $B/bench/gdrpipe_latency -d host -m 1:64K -i 2000 -x 200
TAIL=8 step bw-host-gdrpipe-put 60 $MPIRUN $GP $PUT $B/bench/gdrpipe_bw -d host -m 8K:16M -i 30 -x 5
TAIL=8 step bw-host-sm 60 $MPIRUN $SM $B/bench/gdrpipe_bw -d host -m 8K:16M -i 30 -x 5
echo "=== failed steps: $fails"
