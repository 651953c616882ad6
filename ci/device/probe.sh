#!/bin/bash
# probe.sh -- on the GPU machine: the physical reference (gdrpipe_physref)
# and a quick look at small-message latency and mid-size bandwidth through
# the plugin under protocols v1 and v2. Logs in $OUT.
cd "$(dirname "$0")/../.."
. ci/device/common.sh
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
TAIL=60 step physref 180 "$B/bench/gdrpipe_physref" -i 2000
R=test/integration/run-mpi.sh
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
TAIL=14 step lat-v1 90 $R "$B/bench/gdrpipe_latency" -d cuda -m 0:64K -i 2000 -x 100 D D
TAIL=14 step lat-v2 90 env UCX_PROTO_ENABLE=y $R "$B/bench/gdrpipe_latency" -d cuda -m 0:64K -i 2000 -x 100 D D
TAIL=4 step lat-v2-info 60 env UCX_PROTO_ENABLE=y UCX_PROTO_INFO=y $R "$B/bench/gdrpipe_latency" -d cuda -m 8:8 -i 10 -x 1 D D
grep -iE "tag|rndv|eager" "$OUT/cur.log" | head -40
TAIL=12 step bw-v1 120 env UCX_GDRPIPE_STATS=y $R "$B/bench/gdrpipe_bw" -d cuda -m 64K:64M -i 20 -x 2 D D
echo "fails=$fails"
