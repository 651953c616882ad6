#!/bin/bash
# session2-final.sh -- on the GPU machine (2 x H200): stream-ordered pool
# memory after the legacy-stream fix, the measured crossover (gdrpipe-calibrate
# table + SVG, the plugin's own calibration, the proof sweep through the
# plugin) and the synchronous small-copy switch. Logs and files in $OUT.
set -u
. "$(dirname "$0")/common.sh"
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=direct"
TAIL=4 step pool-default-staged 60 $PRE bash test/integration/expect-path.sh fallback $V -d cuda --cuda-alloc async --max 16M --realloc
TAIL=4 step pool-exportable-off-staged 60 $PRE bash test/integration/expect-path.sh fallback $V -d cuda --cuda-alloc pool --max 16M --realloc
TAIL=6 step pool-exportable-ipc-on 60 $PRE UCX_GDRPIPE_POOL_IPC=y bash test/integration/expect-path.sh direct $V -d cuda --cuda-alloc pool --max 16M --realloc
TAIL=45 step calibrate-gpu0-gpu1 120 $B/tools/calibrate/gdrpipe-calibrate -a 0 -b 1 \
    --cache-dir "$OUT/calib-cli" --svg "$OUT/crossover-0-1.svg"
TAIL=30 step calibrate-gpu0-host 90 $B/tools/calibrate/gdrpipe-calibrate -a 0 -b host \
    --cache-dir "$OUT/calib-cli" --svg "$OUT/crossover-0-host.svg"
TAIL=45 step sweep 300 bench/sweep_paths.sh --iters 20 --reps 3 --calib-dir "$OUT/calib-plugin" "$B"
cp "$OUT"/calib-plugin/crossover-*.txt "$OUT/" 2>/dev/null
R=test/integration/run-mpi.sh
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
L="$B/bench/gdrpipe_latency -d cuda -i 1000 -x 100 -m 0:64K D D"
TAIL=20 step lat-rndv0-sync16k 60 env UCX_RNDV_THRESH=0 $R $L
TAIL=20 step lat-rndv0-async 60 env UCX_RNDV_THRESH=0 UCX_GDRPIPE_SYNC_COPY_MAX=0 $R $L
echo "=== failed steps: $fails"
