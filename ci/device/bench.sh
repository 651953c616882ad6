#!/bin/bash
# bench.sh [SECTION...] -- the GPU-machine run of gdrpipe: correctness on the
# real GPU, the physical reference, the benchmarks, and their tables.
#
# Run on the GPU machine (1 or 2 x H200) from the repository root, with
# .device/bundle (the Debian Open MPI / UCX bundle) and .device/build (a
# release build) carried along; ci/device/build.sh makes both on Debian 12
# (shared/device/README.md). .device/gpu-hooks is used when present.
#
# Sections (arguments, else $BENCH_SECTIONS, else "check physref mpi ucp calib"):
#   check    ucp_verify / mpi_verify with device buffers (both data paths,
#            protocols v1 and v2, pool and re-allocated memory, buffers
#            allocated before MPI_Init), the unit tests that load the real
#            driver, the free interception of a static-cudart program, the
#            rendezvous threshold under Open MPI's parameters
#   physref  gdrpipe_physref (the CUDA driver alone: what the hardware does),
#            gdrpipe_hotpath_bench, cache_bench
#   mpi      gdrpipe_latency / _bw / _bibw through the plugin: device buffers
#            (D D with UCX's defaults and with gdrpipe-run's settings, D H,
#            H D, the staged path forced), host buffers against UCX's own
#            shared-memory transports
#   ucp      gdrpipe_ucp_sweep: UCP ping-pong per size, direct / staged / auto
#            timed side by side in the same two processes
#   calib    gdrpipe-calibrate for each pair of this machine (GPU <-> GPU,
#            host <-> GPU), the plots, and the rule the plugin takes from each
#   sweeps   the proof sweeps (ci/device/proof-sweeps.sh, $SWEEP_REPS times)
#   osu      the OSU micro-benchmarks ($OSU_BENCHES: osu_latency / osu_bw /
#            osu_bibw / osu_mbw_mr; D D and H H) through gdrpipe-run with
#            each of $OSU_VARIANTS (default: "default", gdrpipe-run's own
#            settings; rendezvous forced, UCX_RNDV_THRESH=0, D D only; a list
#            without "default" leaves the defaults out), and through BASE_PLUGIN when set
#            (another build's plugin), and with UCX_REF without gdrpipe
#            (column ucxref), $OSU_REPS times each (3), medians in
#            the tables; then the physical reference; needs OSU_DIR, a folder
#            holding already built OSU binaries for this MPI (this script
#            never builds them)
#   tags     test/integration/mpi_tags (2 and 4 ranks) with device buffers
#            through gdrpipe-run
#   coll     collectives and non-contiguous point-to-point on device buffers
#            through gdrpipe-run (test/integration/coll_verify, 2 and 4
#            ranks), the same with the component off (must crash), one-sided
#            calls on device memory refused (test/integration/rma_device), and
#            with OSU_DIR osu_allreduce on device against host buffers
#   all      every section above (osu only with OSU_DIR)
#
# Environment:
#   OUT          where the logs go (default /tmp/gdrpipe-out): steps.log (every
#                step's output), tables.txt (the tables printed at the end),
#                one log per benchmark, calibration caches and plots
#   OSU_DIR      OSU micro-benchmarks binaries (searched for osu_latency)
#   BASE_PLUGIN  a second libuct_gdrpipe.so to compare with (osu section)
#   UCX_REF      a UCX install (e.g. .device/ucx119, built with CUDA) to compare
#                with in the osu section: variant ucxref runs the same command
#                with plain mpirun, $UCX_REF/lib first on LD_LIBRARY_PATH, no
#                gdrpipe, UCX's defaults and UCX_TLS=$UCX_REF_TLS (default
#                cuda_ipc,cuda_copy,sm,self); collectives on host buffers only
#   SWEEP_REPS   how often each proof sweep runs (default 1)
#   OSU_BENCHES, OSU_REPS, OSU_VARIANTS  the osu section's benchmarks, runs
#                per setting, and settings: NAME or NAME:ITEM[,ITEM...], an
#                ITEM being VAR=VALUE (environment) or -OPTION (passed to the
#                benchmark, e.g. -W256)
#   OSU_ARGS     arguments for every OSU run (e.g. "-m 1:8192 -i 20000")
#   OSU_PAIRS    buffer placements to run: DD HH DH HD (default "DD HH"); the
#                variants' runs are interleaved, one of each in turn
#   OSU_PHYSREF  0: no physical reference after the osu section
#   BENCH_ITERS  timed iterations of the MPI latency runs (default 1000)
# Exit status: the number of failed steps; 2 when this is not a GPU machine or
# .device/ is missing.
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=ci/device/common.sh
. ci/device/common.sh

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "bench.sh: no NVIDIA GPU visible (nvidia-smi -L lists none); run it on the GPU machine" >&2
    exit 2
fi
ngpu=$(nvidia-smi -L | grep -c '^GPU')

if [ $# -gt 0 ]; then
    sections=" $* "
else
    sections=" ${BENCH_SECTIONS:-check physref mpi ucp calib} "
fi
[[ $sections != *" all "* ]] || sections=" check physref mpi ucp calib sweeps osu tags coll "
for s in $sections; do
    case $s in
    check | physref | mpi | ucp | calib | sweeps | osu | tags | coll) ;;
    *) echo "bench.sh: unknown section '$s' (check physref mpi ucp calib sweeps osu tags coll all)" >&2; exit 2 ;;
    esac
done
want() { [[ $sections == *" $1 "* ]]; }

# one log per benchmark, kept for the tables at the end
bench() {   # bench NAME LIMIT CMD...
    local name=$1
    TAIL=${TAIL:-0} step "$@"
    cp "$OUT/cur.log" "$OUT/$name.log"
}
# median_log NAME LOG...: per size, the median value of the runs' "size value"
# lines, into $OUT/NAME.log
median_log() {
    local name=$1
    shift
    awk '/^[0-9]+([ \t]+[0-9.]+)+[ \t]*$/ { n = ++cnt[$1]; v[$1, n] = $2; if (n == 1) order[++m] = $1 }
        END {
            for (j = 1; j <= m; j++) {
                s = order[j]; k = cnt[s]
                for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (v[s, b] + 0 < v[s, a] + 0) { t = v[s, a]; v[s, a] = v[s, b]; v[s, b] = t }
                printf "%s %s\n", s, (k % 2) ? v[s, (k + 1) / 2] : (v[s, k / 2] + v[s, k / 2 + 1]) / 2
            }
        }' "$@" > "$OUT/$name.log"
}
# table TITLE COLUMN=LOG...: the benchmarks' "size value" lines side by side
table() {
    local title=$1 c f names='' files='' logs=()
    shift
    for c in "$@"; do
        f=$OUT/${c#*=}.log
        names+="${c%%=*}|"
        files+="$f|"
        [ ! -s "$f" ] || logs+=("$f")
    done
    echo
    echo "## $title"
    [ ${#logs[@]} -gt 0 ] || { echo "(no results)"; return; }
    awk -v names="$names" -v files="$files" '
        BEGIN { n = split(names, name, "|") - 1; split(files, file, "|")
                for (i = 1; i <= n; i++) col_of[file[i]] = i }
        FNR == 1 { col = col_of[FILENAME] }
        /^[0-9]+([ \t]+[0-9.]+)+[ \t]*$/ { v[$1, col] = $2; if (!($1 in seen)) { seen[$1] = 1; size[++m] = $1 } }
        END {
            printf "| size (B) |"; for (i = 1; i <= n; i++) printf " %s |", name[i]; printf "\n|---|"
            for (i = 1; i <= n; i++) printf "---|"; printf "\n"
            for (j = 1; j <= m; j++) for (k = j + 1; k <= m; k++) if (size[k] + 0 < size[j] + 0) { t = size[j]; size[j] = size[k]; size[k] = t }
            for (j = 1; j <= m; j++) {
                printf "| %s |", size[j]
                for (i = 1; i <= n; i++) printf " %s |", ((size[j], i) in v) ? v[size[j], i] : ""
                printf "\n"
            }
        }' "${logs[@]}"
}
: > "$OUT/tables.txt"
: > "$OUT/steps.rc"
tables() { table "$@" | tee -a "$OUT/tables.txt"; }

{
    date -u
    nvidia-smi -L
    nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
    lscpu | grep -E "Model name|^CPU\(s\)"
    ucx_info -v | head -1
    git log -1 --format="gdrpipe commit %h (%cs)" 2>/dev/null || true
    echo "sections:$sections"
} | tee "$OUT/machine.txt"

RUNMPI=test/integration/run-mpi.sh
# gdrpipe-run's settings (plugin/gdrpipe-run.in): put scheme, host sends by
# rendezvous from 32 KiB; the steps that use them end in -gprun
RUNSET=(-x UCX_RNDV_SCHEME=put_zcopy -x UCX_RNDV_SEND_NBR_THRESH=32k)
SM=(-x "UCX_TLS=posix,cma,self")
export UCX_GDRPIPE_CALIB_DIR=$OUT/calib-plugin

if want check; then
    TAIL=20 step info 30 "$B/tools/gdrpipe-info"
    if [ -x .device/gpu-hooks/static_cudart_frees ]; then
        step static-cudart-frees 60 .device/gpu-hooks/static_cudart_frees
    else
        echo "=== static-cudart-frees: skipped (.device/gpu-hooks not carried)"
    fi
    # the unit tests that run on the real driver (simulator-only cases skip)
    step gpudirect-real-driver 60 env UCX_GDRPIPE_CUDA_LIB="$REAL" "$B/test/unit/cuda/test_cuda_sim" "[gpudirect]"
    step pipeline-unit 150 env UCX_GDRPIPE_CUDA_LIB="$REAL" "$B/test/unit/pipeline/test_pipeline"
    step chunk-pipe-unit 60 env UCX_GDRPIPE_CUDA_LIB="$REAL" GDRPIPE_SIM_DEVICES=2 "$B/test/unit/pipeline/test_chunk_pipe"
    step rdma-unit 120 env UCX_GDRPIPE_CUDA_LIB="$REAL" "$B/test/unit/rdma/unit_rdma"
    # UCP, two processes
    step ucp-v1 150 "${PRE[@]}" "$V" -d cuda --max 64M
    step ucp-v2 150 "${PRE[@]}" UCX_PROTO_ENABLE=y "$V" -d cuda --max 64M
    for p in direct staged; do
        step ucp-$p 200 "${PRE[@]}" UCX_GDRPIPE_PATH=$p "$V" -d cuda --max 64M --realloc
        step ucp-$p-v2 200 "${PRE[@]}" UCX_PROTO_ENABLE=y UCX_GDRPIPE_PATH=$p "$V" -d cuda --max 16M
    done
    step ucp-alloc-before 100 "${PRE[@]}" "$V" -d cuda --alloc-before --max 16M
    step ucp-memtest 60 "${PRE[@]}" "$V" -d cuda --memtest-crash
    step ucp-pool-direct 150 "${PRE[@]}" UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh direct \
        "$V" -d cuda --cuda-alloc pool --max 64M --realloc
    step ucp-pool-default-staged 60 "${PRE[@]}" UCX_GDRPIPE_PATH=direct bash test/integration/expect-path.sh fallback \
        "$V" -d cuda --cuda-alloc async --max 16M --realloc
    # MPI, Open MPI's pml ucx
    export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
    if [ "$ngpu" -ge 2 ]; then
        step mpi-2gpu-1g 300 $RUNMPI "$M" -d cuda --max 1G --realloc
        step mpi-2gpu-put 200 env UCX_RNDV_SCHEME=put_zcopy $RUNMPI "$M" -d cuda --max 256M --realloc
        step mpi-4ranks 120 env RUN_MPI_NP=4 $RUNMPI "$M" -d cuda --max 16M --realloc
    fi
    step mpi-1gpu 200 $RUNMPI "$M" -d cuda -G 0 --max 64M --realloc
    step mpi-staged-put 200 env UCX_GDRPIPE_PATH=staged UCX_RNDV_SCHEME=put_zcopy $RUNMPI "$M" -d cuda --max 256M --realloc
    step mpi-alloc-before 100 $RUNMPI "$M" -d cuda --alloc-before --max 16M
    step mpi-host 120 $RUNMPI "$M" -d host --max 16M
    step mpi-gdrpipe-run-settings 120 env UCX_RNDV_SCHEME=put_zcopy UCX_RNDV_SEND_NBR_THRESH=32k \
        $RUNMPI "$M" -d cuda --max 16M
    unset RUN_MPI_PRELOAD UCX_TLS
    # UCP's rendezvous threshold with Open MPI's context parameters
    # shellcheck disable=SC2016 # expanded by the inner shell
    TAIL=4 step rndv-thresh 60 bash -c 'for ppn in 2 8; do "$@" "$ppn" 16384 || exit 1; done' rndv-thresh "${PRE[@]}" "$B/test/plugin/rndv_thresh"
fi

if want physref; then
    TAIL=60 step physref 240 "$B/bench/gdrpipe_physref" -i 1000
    TAIL=20 step hotpath 60 "$B/bench/gdrpipe_hotpath_bench" 20000
    TAIL=16 step cache-bench 60 "$B/bench/cache/cache_bench"
fi

if want mpi; then
    it=${BENCH_ITERS:-1000}
    LAT=("$B/bench/gdrpipe_latency" -d cuda -i "$it" -x 100 -m 1:4M)
    BW=("$B/bench/gdrpipe_bw" -d cuda -i 20 -x 2 -m 1:64M)
    BIBW=("$B/bench/gdrpipe_bibw" -d cuda -i 20 -x 2 -m 1:64M)
    bench lat-DD 120 "${MPIRUN[@]}" "${GP[@]}" "${LAT[@]}" D D
    bench lat-DD-gprun 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${LAT[@]}" D D
    bench bw-DD 120 "${MPIRUN[@]}" "${GP[@]}" "${BW[@]}" D D
    bench bw-DD-gprun 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${BW[@]}" D D
    bench bibw-DD 120 "${MPIRUN[@]}" "${GP[@]}" "${BIBW[@]}" D D
    bench bibw-DD-gprun 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${BIBW[@]}" D D
    bench bw-DD-staged 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" -x UCX_GDRPIPE_PATH=staged "${BW[@]}" D D
    bench bibw-DD-staged 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" -x UCX_GDRPIPE_PATH=staged "${BIBW[@]}" D D
    for pl in DH HD; do
        bench "lat-$pl" 120 "${MPIRUN[@]}" "${GP[@]}" "${LAT[@]}" "${pl:0:1}" "${pl:1:1}"
        bench "bw-$pl" 120 "${MPIRUN[@]}" "${GP[@]}" "${BW[@]}" "${pl:0:1}" "${pl:1:1}"
        bench "lat-$pl-gprun" 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${LAT[@]}" "${pl:0:1}" "${pl:1:1}"
        bench "bw-$pl-gprun" 120 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${BW[@]}" "${pl:0:1}" "${pl:1:1}"
    done
    HLAT=("$B/bench/gdrpipe_latency" -d host -i 2000 -x 200 -m 1:4M)
    HBW=("$B/bench/gdrpipe_bw" -d host -i 30 -x 5 -m 1:16M)
    HBIBW=("$B/bench/gdrpipe_bibw" -d host -i 30 -x 5 -m 1:16M)
    bench lat-HH 60 "${MPIRUN[@]}" "${GP[@]}" "${HLAT[@]}"
    bench bw-HH 90 "${MPIRUN[@]}" "${GP[@]}" "${HBW[@]}"
    bench lat-HH-gprun 60 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${HLAT[@]}"
    bench lat-HH-sm 60 "${MPIRUN[@]}" "${SM[@]}" "${HLAT[@]}"
    bench bw-HH-gprun 90 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${HBW[@]}"
    bench bw-HH-sm 90 "${MPIRUN[@]}" "${SM[@]}" "${HBW[@]}"
    bench bibw-HH-gprun 90 "${MPIRUN[@]}" "${GP[@]}" "${RUNSET[@]}" "${HBIBW[@]}"
    bench bibw-HH-sm 90 "${MPIRUN[@]}" "${SM[@]}" "${HBIBW[@]}"
fi

if want ucp; then
    U=$B/bench/gdrpipe_ucp_sweep
    # UCP latency and bandwidth per size, the plugin's own choice of path
    TAIL=30 step ucp-gpu-gpu 180 "${PRE[@]}" "$U" -d cuda -m 1:64M
    TAIL=30 step ucp-gpu-host 180 "${PRE[@]}" "$U" -d cuda,host -m 1:64M
    # direct, staged and auto timed side by side in the same two processes,
    # ranks pinned as in the proof sweeps (median one-way µs per size)
    T=(-T -M "direct,staged,auto" -i 20 -x 2 -w 2000 -S "1,1K,4K,16K,64K,256K,1M,4M,16M,64M")
    TAIL=14 step ucp-modes-gpu-gpu 180 "${PRE[@]}" GP_SWEEP_CPUS=2,3 "$U" "${T[@]}" -d cuda
    TAIL=14 step ucp-modes-gpu-host 180 "${PRE[@]}" GP_SWEEP_CPUS=2,3 "$U" "${T[@]}" -d cuda,host
    TAIL=14 step ucp-modes-host-gpu-put 180 "${PRE[@]}" GP_SWEEP_CPUS=2,3 UCX_RNDV_SCHEME=put_zcopy "$U" "${T[@]}" -d cuda,host
fi

if want calib; then
    C=$B/tools/calibrate/gdrpipe-calibrate
    pairs=("-a 0 -b host" "-a host -b 0")
    [ "$ngpu" -lt 2 ] || pairs=("-a 0 -b 1" "${pairs[@]}")
    for pair in "${pairs[@]}"; do
        tag=$(echo "$pair" | tr -d ' -')
        # shellcheck disable=SC2086
        TAIL=16 step "calibrate-$tag" 120 "$C" $pair --force -q --cache-dir "$OUT/calib" --svg "$OUT/crossover-$tag.svg"
    done
    TAIL=40 step calibrate-show 30 "$C" --show "$OUT"/calib/crossover-*.txt
fi

if want sweeps; then
    echo "=== proof sweeps (ci/device/proof-sweeps.sh ${SWEEP_REPS:-1})"
    if OUT=$OUT/sweeps bash ci/device/proof-sweeps.sh "${SWEEP_REPS:-1}"; then :; else fails=$((fails + 1)); fi
fi

if want osu; then
    if [ -z "${OSU_DIR:-}" ]; then
        echo "=== osu: skipped (set OSU_DIR to a folder with built OSU micro-benchmarks)"
    else
        osu() { find "$OSU_DIR" -name "$1" -type f -perm -u+x 2>/dev/null | head -1; }
        # through gdrpipe-run with its defaults (the build tree's launcher)
        # and each variant of $OSU_VARIANTS, $OSU_REPS times each; the table
        # shows the median per size. BASE_PLUGIN: another build's plugin.
        GPRUN=(sh "$B/plugin/gdrpipe-run")
        NOPRE=(--allow-run-as-root --oversubscribe -np 2 --bind-to core --mca btl "^vader,tcp,openib,uct,ofi"
            -x LD_LIBRARY_PATH)
        variants=${OSU_VARIANTS:-default rndv0:UCX_RNDV_THRESH=0}
        [ -z "${BASE_PLUGIN:-}" ] || variants+=" base:GDRPIPE_PLUGIN=$BASE_PLUGIN"
        # UCX_REF: the same command without gdrpipe, a UCX of its own (its
        # CUDA transports) under Open MPI's pml ucx, UCX's own defaults
        if [ -n "${UCX_REF:-}" ]; then
            if [ ! -e "$UCX_REF/lib/libucp.so.0" ]; then
                echo "bench.sh: UCX_REF=$UCX_REF holds no lib/libucp.so.0" >&2
                exit 2
            fi
            UCX_REF=$(cd "$UCX_REF" && pwd)
            variants+=" ucxref"
        fi
        REF=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx
            -x "UCX_TLS=${UCX_REF_TLS:-cuda_ipc,cuda_copy,sm,self}")
        # rendezvous forced is a device-buffer reference only; Debian's Open
        # MPI is not CUDA-aware, and without gdrpipe's Open MPI glue its
        # collectives touch device buffers with the CPU: the UCX reference
        # runs them on host buffers only
        skip() {   # skip BENCH TAG VARIANT
            case $3 in
            rndv0) [ "$2" = HH ] ;;
            ucxref)
                case $1 in
                osu_latency* | osu_bw* | osu_bibw* | osu_mbw_mr | osu_multi_lat) false ;;
                *) [ "$2" != HH ] ;;
                esac
                ;;
            *) false ;;
            esac
        }
        # one GPU: two ranks time-slice it (~150 us a hand-over), so device
        # latency measures the GPU's context switch, not the transport: only
        # host buffers then
        for b in ${OSU_BENCHES:-osu_latency osu_bw osu_bibw osu_mbw_mr}; do
            x=$(osu $b)
            if [ -z "$x" ]; then
                echo "=== $b: not found under $OSU_DIR"
                fails=$((fails + 1))
                continue
            fi
            # pairs: DD HH DH HD (rank 0's buffer, then rank 1's)
            for tag in ${OSU_PAIRS:-DD HH}; do
                [ "$tag" != HH ] && [ "$b" = osu_latency ] && [ "$ngpu" -lt 2 ] && continue
                a=()
                [ "$tag" = HH ] || a=(-d cuda "${tag:0:1}" "${tag:1:1}")
                # the variants' runs interleaved (r1 of each, then r2, ...),
                # so that a drift of the machine touches them alike
                for ((r = 1; r <= ${OSU_REPS:-3}; ++r)); do
                    for v in $variants; do
                        vname=${v%%:*}
                        vset=()
                        vx=()
                        vargs=()
                        if [ "$v" != "$vname" ]; then
                            IFS=, read -ra items <<<"${v#*:}"
                            for kv in "${items[@]}"; do
                                case $kv in
                                -*) vargs+=("$kv") ;;
                                *) vset+=("$kv"); vx+=(-x "${kv%%=*}") ;;
                                esac
                            done
                        fi
                        ! skip "$b" "$tag" "$vname" || continue
                        if [ "$vname" = ucxref ]; then
                            bench "$b-$tag-$vname-r$r" "${OSU_LIMIT:-180}" env -u LD_PRELOAD \
                                LD_LIBRARY_PATH="$UCX_REF/lib:$LD_LIBRARY_PATH" "${vset[@]}" \
                                mpirun "${REF[@]}" "${vx[@]}" "${NOPRE[@]}" "$x" ${OSU_ARGS:-} "${vargs[@]}" "${a[@]}"
                            continue
                        fi
                        bench "$b-$tag-$vname-r$r" "${OSU_LIMIT:-180}" env GDRPIPE_PLUGIN="$P" "${vset[@]}" \
                            "${GPRUN[@]}" mpirun "${vx[@]}" "${NOPRE[@]}" "$x" ${OSU_ARGS:-} "${vargs[@]}" "${a[@]}"
                    done
                done
                for v in $variants; do
                    vname=${v%%:*}
                    ! skip "$b" "$tag" "$vname" || continue
                    median_log "$b-$tag-$vname" "$OUT/$b-$tag-$vname"-r*.log
                done
            done
        done
        [ "${OSU_PHYSREF:-1}" = 0 ] || TAIL=40 step physref-osu 240 "$B/bench/gdrpipe_physref" -i 1000
    fi
fi

if want tags; then
    # MPI's matching rules with host and device buffers through gdrpipe-run
    GPRUN=(sh "$B/plugin/gdrpipe-run")
    NP=(--allow-run-as-root --oversubscribe --bind-to core --mca btl "^vader,tcp,openib,uct,ofi" -x LD_LIBRARY_PATH)
    step tags-2ranks 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" \
        "$B/test/integration/mpi_tags" -d cuda
    step tags-4ranks 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 4 "${NP[@]}" \
        "$B/test/integration/mpi_tags" -d cuda
fi

if want coll; then
    # collectives and non-contiguous point-to-point on device buffers with
    # Debian's Open MPI 4.1.4 (coll component gdrpipe, preloaded interposer),
    # through the build tree's gdrpipe-run; then the original failure with
    # the component off (must die)
    GPRUN=(sh "$B/plugin/gdrpipe-run")
    CV=$B/test/integration/coll_verify
    NP=(--allow-run-as-root --oversubscribe --bind-to core --mca btl "^vader,tcp,openib,uct,ofi" -x LD_LIBRARY_PATH)
    step coll-2ranks 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$CV" -d cuda \
        --sizes 1,100,4096,70000,1048576 --expect-cuda-support 1
    step coll-4ranks 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 4 "${NP[@]}" "$CV" -d cuda \
        --sizes 1,4096,1048576 --expect-cuda-support 1
    step coll-host 120 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$CV" -d host \
        --expect-cuda-support 1
    if step coll-off-must-crash 120 env GDRPIPE_PLUGIN="$P" OMPI_MCA_coll=^gdrpipe "${GPRUN[@]}" mpirun -np 2 \
        "${NP[@]}" "$CV" -d cuda --no-p2p; then :; fi
    # the last step is expected to fail: count it as a pass only if it did
    if grep -q "coll-off-must-crash: rc=0" "$OUT/steps.rc"; then
        echo "=== coll-off-must-crash: it did not crash"
        fails=$((fails + 1))
    else
        fails=$((fails - 1))
    fi
    # one-sided calls on device memory: refused (MPI_ERR_BASE/_BUFFER), host
    # windows working beside them; with the default handlers the job ends
    # with the interposer's message (its exit status is not 0: the step's
    # check is the message, and no fault)
    RMA=$B/test/integration/rma_device
    step rma-2ranks 120 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$RMA"
    step rma-4ranks 120 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 4 "${NP[@]}" "$RMA"
    step rma-fatal 120 env GDRPIPE_PLUGIN="$P" bash test/integration/expect-fail.sh \
        "gdrpipe (Open MPI): MPI_Win_create: " "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$RMA" --fatal
    # MPI_Allreduce on device buffers against host buffers, OSU, same run
    if [ -n "${OSU_DIR:-}" ]; then
        x=$(find "$OSU_DIR" -name osu_allreduce -type f -perm -u+x 2>/dev/null | head -1)
        if [ -n "$x" ]; then
            bench osu_allreduce-D 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$x" -d cuda -m 8:67108864
            bench osu_allreduce-H 240 env GDRPIPE_PLUGIN="$P" "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$x" -m 8:67108864
        fi
        # data-moving collectives: device buffers handed to Open MPI's
        # algorithms (coll_gdrpipe_device_moves 1) against staged (0),
        # interleaved, REPS (default 2) runs each, medians
        for b in ${COLL_BENCHES:-osu_alltoall osu_allgather osu_alltoallv osu_gather osu_scatter}; do
            x=$(find "$OSU_DIR" -name "$b" -type f -perm -u+x 2>/dev/null | head -1)
            [ -n "$x" ] || continue
            for r in $(seq "${REPS:-2}"); do
                for m in 1 0; do
                    bench "$b-moves$m-$r" 240 env GDRPIPE_PLUGIN="$P" OMPI_MCA_coll_gdrpipe_device_moves=$m \
                        "${GPRUN[@]}" mpirun -np 2 "${NP[@]}" "$x" -d cuda -m 4:4194304 -i 50
                done
            done
            for m in 1 0; do median_log "$b-moves$m" "$OUT/$b-moves$m-"*.log; done
        done
    fi
fi

# the tables
if want mpi; then
    tables "MPI latency, device buffers, µs (UCX defaults / gdrpipe-run's settings)" \
        "D D=lat-DD" "D D gdrpipe-run=lat-DD-gprun" "D H=lat-DH" "D H gdrpipe-run=lat-DH-gprun" \
        "H D=lat-HD" "H D gdrpipe-run=lat-HD-gprun"
    tables "MPI bandwidth, device buffers, MB/s" \
        "bw D D=bw-DD" "bw D D gdrpipe-run=bw-DD-gprun" "bw D H=bw-DH" "bw D H gdrpipe-run=bw-DH-gprun" \
        "bw H D=bw-HD" "bw H D gdrpipe-run=bw-HD-gprun" \
        "staged bw=bw-DD-staged" "bibw D D=bibw-DD" "bibw D D gdrpipe-run=bibw-DD-gprun" "staged bibw=bibw-DD-staged"
    tables "MPI host buffers: gdrpipe (UCX defaults / gdrpipe-run's settings) against posix,cma (latency µs, bandwidth MB/s)" \
        "lat gdrpipe=lat-HH" "lat gdrpipe-run=lat-HH-gprun" "lat sm=lat-HH-sm" "bw gdrpipe=bw-HH" "bw gdrpipe-run=bw-HH-gprun" "bw sm=bw-HH-sm" \
        "bibw gdrpipe-run=bibw-HH-gprun" "bibw sm=bibw-HH-sm"
fi
if want coll && [ -n "${OSU_DIR:-}" ]; then
    tables "osu_allreduce, 2 ranks, average latency µs: device buffers / host buffers" \
        "device=osu_allreduce-D" "host=osu_allreduce-H"
    for b in ${COLL_BENCHES:-osu_alltoall osu_allgather osu_alltoallv osu_gather osu_scatter}; do
        [ -f "$OUT/$b-moves1.log" ] || continue
        tables "$b -d cuda, 2 ranks, average latency µs (medians): handed on / staged" \
            "handed-on=$b-moves1" "staged=$b-moves0"
    done
fi
if want osu && [ -n "${OSU_DIR:-}" ]; then
    for b in ${OSU_BENCHES:-osu_latency osu_bw osu_bibw osu_mbw_mr}; do
        cols=()
        for tag in ${OSU_PAIRS:-DD HH}; do
            for v in ${OSU_VARIANTS:-default rndv0:x} ${BASE_PLUGIN:+base:x} ${UCX_REF:+ucxref}; do
                cols+=("${tag:0:1} ${tag:1:1} ${v%%:*}=$b-$tag-${v%%:*}")
            done
        done
        tables "$b, medians of ${OSU_REPS:-3} (gdrpipe-run defaults and each variant)" "${cols[@]}"
    done
fi
echo
echo "## steps"
cat "$OUT/steps.rc" 2>/dev/null
echo "=== failed steps: $fails (logs in $OUT)"
exit "$fails"
