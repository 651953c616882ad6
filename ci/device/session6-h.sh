#!/bin/bash
# session6-h.sh -- on the GPU machine, repository root, .device/ carried: the
# host-memory proof sweeps with the check's band reaching 1 MiB at least
# (kMinTop, after run 36 staged every message): host -> GPU put twice, GPU ->
# host once; caches and per-rank logs come back as one tarball.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3 UCX_GDRPIPE_STATS=y
mkdir -p "$OUT"/work-1 "$OUT"/work-2 "$OUT"/work-gh
for i in 1 2; do
    TAIL=30 step put-$i 115 env KEEP_WORK=1 TMPDIR="$OUT/work-$i" UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-$i" "$B"
done
TAIL=30 step gpu-host 60 env KEEP_WORK=1 TMPDIR="$OUT/work-gh" bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gh" "$B"
tar -C "$OUT" -czf "$OUT/session6-h.tgz" $(cd "$OUT" && ls -d work-* calib-*) && rm -rf "$OUT"/work-* "$OUT"/calib-*
echo "=== failed steps: $fails"
