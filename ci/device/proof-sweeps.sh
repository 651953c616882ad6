#!/bin/bash
# proof-sweeps.sh [REPS] -- on the GPU machine, repository root, .device/
# bundle and build carried: the proof sweeps of issue 5 (bench/sweep_paths.sh,
# the three modes side by side, a fresh cache each), REPS times each (default
# 1): host -> GPU put, GPU -> host, and GPU <-> GPU when there are two GPUs.
# Each sweep's cache, per-rank UCX logs and work files come back in one
# tarball ($OUT/proof-sweeps.tgz); a summary of the verdicts ends the log.
# The session scripts (session*-*.sh) are the record of the runs made so far.
# PROOF_SWEEPS: which sweeps (default "put get gpu-gpu").
# PROOF_SWEEP_ARGS: more bench/sweep_paths.sh options (e.g. a simulator
# topology, to try this script without a GPU).
set -u
. "$(dirname "$0")/common.sh"
reps=${1:-1}
export GP_SWEEP_CPUS=2,3 UCX_GDRPIPE_STATS=y
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
sweep() {   # sweep NAME LIMIT SCHEME ARGS...  (SCHEME: UCX_RNDV_SCHEME)
    local name=$1 limit=$2 scheme=$3
    shift 3
    mkdir -p "$OUT/work-$name"
    TAIL=30 step "$name" "$limit" env KEEP_WORK=1 TMPDIR="$OUT/work-$name" UCX_RNDV_SCHEME="$scheme" \
        bench/sweep_paths.sh --iters 20 --reps 5 \
        --calib-dir "$OUT/calib-$name" "$@" ${PROOF_SWEEP_ARGS:-} "$B"
    local v
    v=$(grep -h "^PASS\|^FAIL" "$OUT/cur.log" | tail -1)
    echo "$name: ${v:-no verdict, see steps.log}" >> "$OUT/verdicts"
}
want=" ${PROOF_SWEEPS:-put get gpu-gpu} "
for ((i = 1; i <= reps; i++)); do
    [[ $want != *" put "* ]] || sweep put-$i 170 put_zcopy --mem cuda,host
    [[ $want != *" get "* ]] || sweep get-$i 120 auto --mem cuda,host
    [[ $want != *" gpu-gpu "* ]] || [ "$ngpu" -lt 2 ] || sweep gpu-gpu-$i 170 auto
done
echo "=== verdicts"
cat "$OUT/verdicts"
tar -C "$OUT" -czf "$OUT/proof-sweeps.tgz" $(cd "$OUT" && ls -d work-* calib-*) && rm -rf "$OUT"/work-* "$OUT"/calib-*
echo "=== failed steps: $fails"
