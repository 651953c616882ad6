#!/bin/bash
# probe.sh -- on the GPU machine: the physical reference (gdrpipe_physref)
# and a look at latency and bandwidth through the plugin with a few UCX
# settings (protocol v1/v2, forced rendezvous, put vs get scheme). Logs in $OUT.
cd "$(dirname "$0")/../.."
. ci/device/common.sh
TAIL=40 step physref 180 "$B/bench/gdrpipe_physref" -i 1000
R=test/integration/run-mpi.sh
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
L="$B/bench/gdrpipe_latency -d cuda -i 1000 -x 100"
TAIL=16 step lat-v1-stats 90 env UCX_GDRPIPE_STATS=y UCX_LOG_LEVEL=info $R $L -m 4K:128K D D
grep -E "xfer:" "$OUT/cur.log" | head -2
TAIL=12 step lat-v1-rndv0 90 env UCX_RNDV_THRESH=0 $R $L -m 0:64K D D
TAIL=12 step lat-v2-rndv0 90 env UCX_PROTO_ENABLE=y UCX_RNDV_THRESH=0 $R $L -m 0:64K D D
W="$B/bench/gdrpipe_bw -d cuda -i 20 -x 2"
TAIL=12 step bw-v1 120 $R $W -m 64K:64M D D
TAIL=12 step bw-v1-put 120 env UCX_RNDV_SCHEME=put_zcopy $R $W -m 64K:64M D D
TAIL=4 step bibw-v1 120 $R $B/bench/gdrpipe_bibw -d cuda -i 20 -x 2 -m 4M:64M D D
TAIL=4 step bibw-v1-put 120 env UCX_RNDV_SCHEME=put_zcopy $R $B/bench/gdrpipe_bibw -d cuda -i 20 -x 2 -m 4M:64M D D
echo "fails=$fails"
