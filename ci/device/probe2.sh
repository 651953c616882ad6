#!/bin/bash
# probe2.sh -- on the GPU machine: per-call costs of the per-message path
# (gdrpipe_hotpath_bench) and device latency/bandwidth through the plugin.
cd "$(dirname "$0")/../.."
. ci/device/common.sh
TAIL=20 step hotpath 120 "$B/bench/gdrpipe_hotpath_bench" 20000
R=test/integration/run-mpi.sh
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
L="$B/bench/gdrpipe_latency -d cuda -i 2000 -x 100"
TAIL=12 step lat-v1 90 $R $L -m 0:64K D D
TAIL=12 step lat-v1-rndv0 90 env UCX_RNDV_THRESH=0 $R $L -m 0:64K D D
TAIL=12 step lat-v1-rndv0-sm 90 env UCX_TLS=gdrpipe,sm,self UCX_RNDV_THRESH=0 $R $L -m 0:64K D D
W="$B/bench/gdrpipe_bw -d cuda -i 20 -x 2"
TAIL=12 step bw-v1-put 120 env UCX_RNDV_SCHEME=put_zcopy $R $W -m 64K:64M D D
echo "fails=$fails"
