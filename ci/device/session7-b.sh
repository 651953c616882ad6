#!/bin/bash
# session7-b.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried (with .device/build/epinfo: a two-process ucp_ep_print_info, a
# throwaway since replaced by test/plugin/rndv_thresh): why do
# MPI D -> D ping-pongs of 16 and 32 KiB take 36 and 63 us (eager, it seems)
# while 64 KiB takes 13 us and UCP-level 16 KiB rendezvous takes 11 us?
# The CPU (UCX's bcopy bandwidth estimate depends on its vendor), the
# thresholds UCP computes for a gdrpipe endpoint, and the MPI latency with
# the default and a pinned rendezvous threshold, with engine counters.
set -u
. "$(dirname "$0")/common.sh"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)"
env LD_PRELOAD=$P UCX_TLS=gdrpipe,self .device/build/epinfo | grep -v "^#$"
env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_BCOPY_BW=5008MBs .device/build/epinfo | grep tag_send
L="$B/bench/gdrpipe_latency -d cuda -i 1000 -x 100"
export UCX_GDRPIPE_CALIB_DIR=$OUT/calib
TAIL=8 step lat-default 60 $MPIRUN $GP $L -m 8192:131072 D D
TAIL=8 step lat-rndv8k 60 $MPIRUN $GP -x UCX_RNDV_THRESH=8240 $L -m 8192:131072 D D
TAIL=8 step lat-sendnbr8k 60 $MPIRUN $GP -x UCX_RNDV_SEND_NBR_THRESH=8240 $L -m 8192:131072 D D
for s in 16384 65536; do
    TAIL=8 step lat-stats-$s 60 $MPIRUN $GP -x UCX_GDRPIPE_STATS=y -x UCX_LOG_LEVEL=info $L -m $s:$s D D
    grep -h "xfer:" "$OUT/cur.log" | cut -c1-160
done
TAIL=8 step lat-host 60 $MPIRUN $GP $B/bench/gdrpipe_latency -d host -i 1000 -x 100 -m 8192:131072
TAIL=8 step lat-host-sendnbr8k 60 $MPIRUN $GP -x UCX_RNDV_SEND_NBR_THRESH=8240 $B/bench/gdrpipe_latency -d host -i 1000 -x 100 -m 8192:131072
echo "=== failed steps: $fails"
