#!/bin/bash
# session3-a.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: pool memory over the direct path (imports no longer kept past a
# transfer), GPU <-> host calibration with the second rule form. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
TAIL=8 step pool-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline" "[pool]"
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=direct UCX_GDRPIPE_POOL_IPC=y"
TAIL=4 step pool-direct 150 $PRE bash test/integration/expect-path.sh direct $B/test/integration/ucp_verify -d cuda --cuda-alloc pool --max 64M --realloc
for pair in "-a 0 -b host" "-a host -b 1" "-a 1 -b host" "-a 0 -b 1"; do
    tag=$(echo "$pair" | tr -d ' -')
    TAIL=40 step "calibrate $pair" 60 "$B/tools/calibrate/gdrpipe-calibrate" $pair --force -q \
        --cache-dir "$OUT/calib" --svg "$OUT/crossover-$tag.svg"
done
TAIL=12 step host-pairs-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline" "auto threshold with host memory on one side: the inverted rule"
echo "=== failed steps: $fails"
