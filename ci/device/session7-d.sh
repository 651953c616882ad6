#!/bin/bash
# session7-d.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the OSU-style MPI benchmarks with one buffer on the GPU and one in
# host memory (D H, H D), never recorded before, and bibw D D, with the
# session-7 build (dedicated wire bandwidth). Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
export UCX_GDRPIPE_CALIB_DIR=$OUT/calib
for pl in "D H" "H D"; do
    n=${pl// /}
    TAIL=25 step lat-$n 60 $MPIRUN $GP $B/bench/gdrpipe_latency -d cuda -i 1000 -x 100 -m 1:4194304 $pl
    TAIL=25 step bw-$n 60 $MPIRUN $GP $B/bench/gdrpipe_bw -d cuda -i 50 -x 5 -m 1:67108864 $pl
    TAIL=25 step lat-$n-put 60 $MPIRUN $GP $PUT $B/bench/gdrpipe_latency -d cuda -i 1000 -x 100 -m 1:4194304 $pl
done
TAIL=25 step bibw-DD 60 $MPIRUN $GP $B/bench/gdrpipe_bibw -d cuda -i 50 -x 5 -m 1:67108864 D D
echo "=== failed steps: $fails"
