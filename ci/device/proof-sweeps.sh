#!/bin/bash
# proof-sweeps.sh [REPS] -- on the GPU machine, repository root, .device/
# bundle and build carried: the proof sweeps of the measured crossover
# (bench/sweep_paths.sh: direct, staged and auto timed side by side at every
# size 1 B .. 64 MiB, a fresh cache each; PASS when auto is within 1.05 x the
# faster path everywhere), REPS times each (default 1): host -> GPU put,
# GPU -> host, and GPU <-> GPU when there are two GPUs.
# Each sweep's cache, per-rank UCX logs and work files come back in one
# tarball ($OUT/proof-sweeps.tgz); a summary of the verdicts ends the log.
# PROOF_SWEEPS: which sweeps (default "put get gpu-gpu").
# PROOF_SWEEP_ARGS: more bench/sweep_paths.sh options (e.g. a simulator
# topology, to try this script without a GPU).
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=ci/device/common.sh
. ci/device/common.sh
reps=${1:-1}
export GP_SWEEP_CPUS=2,3 UCX_GDRPIPE_STATS=y
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
: > "$OUT/verdicts"
sweep() {   # sweep NAME LIMIT SCHEME ARGS...  (SCHEME: UCX_RNDV_SCHEME)
    local name=$1 limit=$2 scheme=$3
    shift 3
    mkdir -p "$OUT/work-$name"
    # shellcheck disable=SC2086 # PROOF_SWEEP_ARGS: several options
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
kept=$(cd "$OUT" && ls -d work-* calib-* 2>/dev/null)
# shellcheck disable=SC2086 # one folder a line, no spaces
[ -z "$kept" ] || { tar -C "$OUT" -czf "$OUT/proof-sweeps.tgz" $kept && (cd "$OUT" && rm -rf $kept); }
echo "=== failed steps: $fails"
exit "$fails"
