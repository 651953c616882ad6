#!/bin/bash
# session6-g.sh -- on the GPU machine, repository root, .device/ carried: why
# host -> GPU puts fail the proof sweep in 3 of 5 runs of session 6 (run 35:
# auto on the staged path at 1 MiB where direct was 14 % faster; auto 9-15 %
# above direct at 16 KiB where the rule says direct). Each rank's UCX log now
# has a file of its own, the engine's path counters are on, and the work
# folders, caches and logs come back as one tarball.
set -u
. "$(dirname "$0")/common.sh"
export GP_SWEEP_CPUS=2,3 UCX_GDRPIPE_STATS=y
mkdir -p "$OUT"/work-1 "$OUT"/work-2 "$OUT"/work-small
for i in 1 2; do
    TAIL=30 step put-$i 150 env KEEP_WORK=1 TMPDIR="$OUT/work-$i" UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-$i" "$B"
done
TAIL=20 step put-small 90 env KEEP_WORK=1 TMPDIR="$OUT/work-small" UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --sizes 1,1024,4096,16384,65536,262144 --no-around --iters 20 --reps 3 --calib-dir "$OUT/calib-small" "$B"
grep -h "crossover for" "$OUT"/work-*/*/*.ucx.* 2>/dev/null | sed "s/.*INFO  //" | sort | uniq -c | sort -rn | head -20 | cut -c1-400
tar -C "$OUT" -czf "$OUT/session6-g.tgz" $(cd "$OUT" && ls -d work-* calib-*) && rm -rf "$OUT"/work-* "$OUT"/calib-*
echo "=== failed steps: $fails"
