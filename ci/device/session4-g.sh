#!/bin/bash
# session4-g.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: host -> GPU puts of 4 MiB on the direct path ran ~6 % slower in
# PATH=auto than in PATH=direct (run 23). Threads and their CPU use in both
# modes, ranks pinned to one CPU each as in the sweeps.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3
for mode in direct auto; do
    echo "=== PATH=$mode"
    env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_THRESH=auto UCX_RNDV_SCHEME=put_zcopy UCX_GDRPIPE_PATH=$mode \
        UCX_GDRPIPE_CALIB_DIR=$OUT/g-$mode UCX_GDRPIPE_STATS=y UCX_LOG_LEVEL=info \
        timeout 120 $B/bench/gdrpipe_ucp_sweep -d cuda,host -T -S 16K,4M,4M -i 4000 -x 2 > "$OUT/g-$mode.log" 2>&1 &
    sleep 4
    ps -L -o pid,tid,psr,pcpu,stat,comm -p "$(pgrep -d, -f gdrpipe_ucp_sweep)" | head -40
    wait
    grep -E "^[0-9]|xfer:|crossover for" "$OUT/g-$mode.log" | cut -c1-200 | head -12
done
echo "=== failed steps: $fails"
