#!/bin/bash
# stack.sh NAME BUILD -- gdrpipe on the MPI and UCX this environment provides
# (the GPU machine's own Ubuntu stack, or a Debian root filesystem entered
# with chroot), without ci/device/common.sh's bundled Debian 12 stack: the
# verifiers with device buffers, then the OSU point-to-point benchmarks with
# device and host buffers, each setting's runs interleaved, medians in tables.
#
#   BUILD      a gdrpipe build for this UCX (plugin/, bench/, test/integration/)
#   OSU_DIR    OSU micro-benchmarks binaries (built elsewhere; never here)
#   UCX_REF    a UCX built with CUDA, measured beside gdrpipe without it
#              (variant ucxref: UCX_TLS=cuda_ipc,cuda_copy,sm,self)
#   REPS       runs of each setting (3)      OUT  logs (/tmp/gdrpipe-out/NAME)
#   OSU_BENCHES, OSU_PAIRS  which benchmarks and placements (default: osu_latency
#              osu_bw osu_bibw; "D D" "D H" "H D" as DD DH HD) besides osu_mbw_mr D D
#   DD_EXTRA   more settings for osu_bw and osu_bibw D D: NAME:VAR=VALUE[,...]
#              (gdrpipe-run's defaults plus that environment)
#   PARTS      what to run (default "verify p2p"): verify (mpi_verify, ucp_verify,
#              gdrpipe_bw v2/v1), p2p (the OSU point-to-point benchmarks), coll
#              (coll_verify with device and mixed buffers on 2 and 4 ranks,
#              rma_device and accel_verify where built, then the OSU collectives of COLL_BENCHES
#              with -d cuda, the data-moving ones in each setting of COLL_MODES,
#              COLL_REPS runs each (2), medians; COLL_ARGS their arguments,
#              default "-m 4:4194304 -i 50")
#   COLL_MODES the data-moving collectives' settings (default "moves1 moves0"):
#              moves1/moves0 coll_gdrpipe_device_moves 1/0, gpu0
#              coll_gdrpipe_device_moves_gpu 0 (no data moved on the GPU)
#
# Settings: v2 = gdrpipe-run's defaults (UCX's protocol v2 on 1.16+); v1 (D D only) =
# UCX_PROTO_ENABLE=n; rndv = v2 with every message by rendezvous
# (UCX_RNDV_THRESH=0, osu_bibw only); ucxref. Exit status: failed steps.
set -u
name=${1:?usage: stack.sh NAME BUILD}
B=$(cd "${2:?usage: stack.sh NAME BUILD}" && pwd)
OUT=${OUT:-/tmp/gdrpipe-out}/$name
REPS=${REPS:-3}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_WARN_UNUSED_ENV_VARS=n
export GDRPIPE_PLUGIN=$B/plugin/libuct_gdrpipe.so
RUN=(sh "$B/plugin/gdrpipe-run" mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core)
fails=0
step() {   # step LOGNAME LIMIT CMD...
    local log=$OUT/$1.log t=$2; shift 2
    timeout --kill-after=5 "$t" "$@" >"$log" 2>&1
    local rc=$?
    echo "=== $(basename "$log" .log): rc=$rc" >>"$OUT/steps.rc"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); echo "FAILED ($rc): $*"; tail -5 "$log"; }
    return $rc
}

parts=" ${PARTS:-verify p2p} "
has() { [[ $parts == *" $1 "* ]]; }
echo "== $name: $(ucx_info -v 2>/dev/null | sed -n 's/^# Library version: //p') / $(mpirun --version 2>&1 | head -1)"
if has verify; then
step verify-mpi 300 "${RUN[@]}" "$B/test/integration/mpi_verify" -d cuda --max 64M --realloc &&
    tail -1 "$OUT/verify-mpi.log"
step verify-ucp 300 env LD_PRELOAD="$GDRPIPE_PLUGIN" UCX_TLS=gdrpipe,self \
    "$B/test/integration/ucp_verify" -d cuda --max 64M && tail -1 "$OUT/verify-ucp.log"
step bw-v2 120 "${RUN[@]}" "$B/bench/gdrpipe_bw" -d cuda -m 65536:67108864 D D &&
    tail -5 "$OUT/bw-v2.log"
UCX_PROTO_ENABLE=n step bw-v1 120 "${RUN[@]}" -x UCX_PROTO_ENABLE "$B/bench/gdrpipe_bw" \
    -d cuda -m 65536:67108864 D D && tail -5 "$OUT/bw-v1.log"
fi
if has coll; then
    # every collective and non-contiguous point-to-point on device buffers
    # (and on mixed placements), checked against host-computed results
    CV=$B/test/integration/coll_verify
    RUN4=("${RUN[@]}")
    RUN4[6]=4
    # (point-to-point with derived datatypes to 70000 B: on Open MPI 5 the
    # convertor copies each block of a device buffer on its own, so a 1 MiB
    # vector of 8-byte blocks takes minutes)
    step coll-verify-2 300 "${RUN[@]}" "$CV" -d cuda --sizes 1,100,4096,70000,1048576 \
        --no-p2p --expect-cuda-support 1 && tail -1 "$OUT/coll-verify-2.log"
    step coll-p2p-2 300 "${RUN[@]}" "$CV" -d cuda --sizes 1,100,4096,70000 \
        --only-p2p --expect-cuda-support 1 && tail -1 "$OUT/coll-p2p-2.log"
    step coll-verify-4 300 "${RUN4[@]}" "$CV" -d cuda --sizes 1,4096,1048576 \
        --no-p2p --expect-cuda-support 1 && tail -1 "$OUT/coll-verify-4.log"
    step coll-verify-mixed-4 300 "${RUN4[@]}" "$CV" -d mixed --sizes 1,4096,70000 \
        --expect-cuda-support 1 && tail -1 "$OUT/coll-verify-mixed-4.log"
    if [ -x "$B/test/integration/rma_device" ]; then
        # one-sided: Open MPI 5's osc ucx moves device windows
        rma=()
        mpirun --version 2>&1 | grep -q 'Open MPI) [5-9]' && rma=(--device-windows)
        step rma-device 120 "${RUN[@]}" "$B/test/integration/rma_device" "${rma[@]}" &&
            tail -1 "$OUT/rma-device.log"
    fi
    if [ -x "$B/test/integration/accel_verify" ]; then
        step accel-verify 120 "${RUN[@]}" "$B/test/integration/accel_verify" &&
            tail -1 "$OUT/accel-verify.log"
    fi
fi

osu=$(find "${OSU_DIR:-/nonexistent}" -name osu_bw -type f 2>/dev/null | head -1)
if [ -z "$osu" ]; then
    echo "== $name: no OSU_DIR: OSU benchmarks skipped"
    exit $fails
fi
od=$(dirname "$osu")
run_osu() {   # run_osu VARIANT BENCH PAIR REP
    local v=$1 b=$2 p=$3 r=$4 args=() log
    log=$v-$b-${p/ /}-$r
    case $b in osu_latency) args=(-i 200 -x 20) ;; osu_mbw_mr) args=(-m 8:8) ;; esac
    case $v in
    v2) step "$log" 180 "${RUN[@]}" "$od/$b" -d cuda "${args[@]}" $p ;;
    v1) UCX_PROTO_ENABLE=n step "$log" 180 "${RUN[@]}" -x UCX_PROTO_ENABLE "$od/$b" -d cuda "${args[@]}" $p ;;
    rndv) UCX_RNDV_THRESH=0 step "$log" 180 "${RUN[@]}" -x UCX_RNDV_THRESH "$od/$b" -d cuda "${args[@]}" $p ;;
    *:*)
        local kv e=() kvx
        IFS=, read -ra kv <<<"${v#*:}"
        for kvx in "${kv[@]}"; do e+=(-x "$kvx"); done
        log=${v%%:*}-$b-${p/ /}-$r
        env "${kv[@]}" bash -c "$(declare -f step); $(declare -p OUT fails); step \"\$@\"" _ \
            "$log" 180 "${RUN[@]}" "${e[@]}" "$od/$b" -d cuda "${args[@]}" $p ;;
    ucxref)
        LD_LIBRARY_PATH=$UCX_REF/lib:${LD_LIBRARY_PATH:-} step "$log" 180 mpirun \
            --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca pml ucx \
            --mca pml_ucx_tls any --mca pml_ucx_devices any -x LD_LIBRARY_PATH \
            -x UCX_TLS=cuda_ipc,cuda_copy,sm,self "$od/$b" -d cuda "${args[@]}" $p ;;
    esac
}
variants="v2 v1"
[ -z "${UCX_REF:-}" ] || variants="$variants ucxref"
has p2p || REPS=0
for r in $(seq "$REPS"); do
    for b in ${OSU_BENCHES:-osu_latency osu_bw osu_bibw}; do
        for pp in ${OSU_PAIRS:-DD DH HD}; do
            p="${pp:0:1} ${pp:1:1}"
            for v in $variants; do
                # v1 is the reference of the D D targets only
                [ "$v" = v1 ] && [ "$p" != "D D" ] || run_osu "$v" "$b" "$p" "$r"
            done
        done
    done
    run_osu rndv osu_bibw "D D" "$r"
    for x in ${DD_EXTRA:-}; do run_osu "$x" osu_bw "D D" "$r"; run_osu "$x" osu_bibw "D D" "$r"; done
    for v in $variants; do run_osu "$v" osu_mbw_mr "D D" "$r"; done
done

# the OSU collectives on device buffers through gdrpipe-run; the data-moving
# ones with device buffers handed to Open MPI's algorithms (moves1) and
# staged (moves0), interleaved
moving=" osu_alltoall osu_allgather osu_alltoallv osu_allgatherv osu_gather osu_scatter osu_gatherv osu_scatterv "
coll_benches=${COLL_BENCHES:-osu_allreduce osu_reduce osu_bcast osu_reduce_scatter osu_alltoall osu_allgather osu_alltoallv osu_gather osu_scatter}
has coll || coll_benches=
for r in $(seq "${COLL_REPS:-2}"); do
    for b in $coll_benches; do
        x=$(find "$OSU_DIR" -name "$b" -type f 2>/dev/null | head -1)
        [ -n "$x" ] || continue
        ms=moves1
        [[ $moving != *" $b "* ]] || ms=${COLL_MODES:-moves1 moves0}
        for m in $ms; do
            case $m in
            moves[01]) e=OMPI_MCA_coll_gdrpipe_device_moves=${m#moves} ;;
            gpu0) e=OMPI_MCA_coll_gdrpipe_device_moves_gpu=0 ;;
            *) echo "stack.sh: unknown COLL_MODES entry $m" >&2; continue ;;
            esac
            env "$e" bash -c "$(declare -f step); $(declare -p OUT fails); step \"\$@\"" _ \
                "$m-$b-DD-$r" 180 "${RUN[@]}" -x "${e%%=*}" "$x" -d cuda \
                ${COLL_ARGS:--m 4:4194304 -i 50} || fails=$((fails + 1))
        done
    done
done

# medians per size of the runs' "size value" lines; one table per benchmark
median() {   # median LOG... -> "size median" lines
    awk '/^[0-9]+([ \t]+[0-9.]+)+[ \t]*$/ { n = ++c[$1]; v[$1, n] = $2; if (n == 1) o[++m] = $1 }
        END { for (j = 1; j <= m; j++) { s = o[j]; k = c[s]
                for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++)
                    if (v[s, b] + 0 < v[s, a] + 0) { t = v[s, a]; v[s, a] = v[s, b]; v[s, b] = t }
                printf "%s %s\n", s, (k % 2) ? v[s, (k + 1) / 2] : (v[s, k / 2] + v[s, k / 2 + 1]) / 2 } }' "$@"
}
for b in osu_latency osu_bw osu_bibw osu_mbw_mr $coll_benches; do
    for p in DD DH HD; do
        cols=""
        for v in $variants rndv moves1 moves0 gpu0 $(for x in ${DD_EXTRA:-}; do echo "${x%%:*}"; done); do
            ls "$OUT/$v-$b-$p-"*.log >/dev/null 2>&1 || continue
            median "$OUT/$v-$b-$p-"*.log >"$OUT/med-$v-$b-$p"
            cols="$cols $v"
        done
        [ -n "$cols" ] || continue
        echo
        echo "## $name $b $p (medians)"
        printf '| size |'; for v in $cols; do printf ' %s |' "$v"; done; echo
        join_all=$(for v in $cols; do echo "$OUT/med-$v-$b-$p"; done)
        awk -v n="$(echo $cols | wc -w)" 'FNR == 1 { f++ } { v[$1, f] = $2; if (!($1 in s)) { s[$1] = 1; z[++m] = $1 } }
            END { for (j = 1; j <= m; j++) { printf "| %s |", z[j]; for (i = 1; i <= n; i++) printf " %s |", v[z[j], i]; printf "\n" } }' $join_all
    done
done | tee "$OUT/tables.txt"
echo "== $name: $fails failed steps"
exit $fails
