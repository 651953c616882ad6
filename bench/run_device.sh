#!/bin/bash
# GPU-machine benchmark run: gdrpipe_latency / gdrpipe_bw / gdrpipe_bibw with
# device buffers on both ranks (-d cuda D D), 2 ranks on 2 GPUs (rank r uses
# GPU r), over the gdrpipe plugin; once with the plugin's own choice of path
# and once per forced path (UCX_GDRPIPE_PATH=direct|staged). Optionally also a
# 1 GiB data verification (mpi_verify) and the same benchmarks over Debian's
# transports without the plugin (UCX's host-staged path, for reference).
#
# Usage: bench/run_device.sh [-b BUILDDIR] [-o OUTDIR] [-p PLUGIN] [-e ENVSH]
#                            [-P "auto direct staged"] [-B "latency bw bibw"]
#                            [-V] [-R] [-- BENCH_ARGS...]
#   -b BUILDDIR  meson build directory with bench/ and plugin/ (default: build)
#   -o OUTDIR    where logs go (default: $OUT, else ./device-logs)
#   -p PLUGIN    libuct_gdrpipe.so (default: BUILDDIR/plugin/libuct_gdrpipe.so)
#   -e ENVSH     environment to source first (default: .device/bundle/env.sh,
#                the bundled Open MPI 4.1.4 + UCX 1.13.1; "none" to skip)
#   -P PATHS     paths to run: auto (no UCX_GDRPIPE_PATH), direct, staged
#   -B BENCHES   which of latency bw bibw
#   -V           also run mpi_verify -d cuda --max 1G (data check up to 1 GiB)
#   -R           also run the benchmarks without the plugin (UCX_TLS=
#                posix,cma,self: whatever Debian's UCX does with GPU memory;
#                expected to fail or crash without a CUDA-aware UCX)
#   BENCH_ARGS   passed to every benchmark (default: OSU's defaults)
# Output: OUTDIR/<bench>.<path>.log per run, OUTDIR/summary.txt (all tables),
# OUTDIR/env.txt (machine and settings). Exit code: number of failed runs.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=build out=${OUT:-./device-logs} plugin="" envsh=$root/.device/bundle/env.sh
paths="auto direct staged" benches="latency bw bibw" verify=0 ref=0
while getopts "b:o:p:e:P:B:VRh" opt; do
    case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    p) plugin=$OPTARG ;;
    e) envsh=$OPTARG ;;
    P) paths=$OPTARG ;;
    B) benches=$OPTARG ;;
    V) verify=1 ;;
    R) ref=1 ;;
    h) sed -n '2,31p' "$0"; exit 0 ;;
    *) exit 1 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
plugin=$(realpath "${plugin:-$build/plugin/libuct_gdrpipe.so}")
mkdir -p "$out"
out=$(realpath "$out")
if [ "$envsh" != none ]; then
    # shellcheck disable=SC1090
    . "$envsh"
fi
run_mpi=$root/test/integration/run-mpi.sh
export RUN_MPI_TIMEOUT=${RUN_MPI_TIMEOUT:-580}
failed=0

{
    date -u
    uname -a
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv 2>&1 || true
    nvidia-smi topo -m 2>&1 || true
    echo "plugin: $plugin"
    echo "mpirun: $(command -v mpirun)"; mpirun --version 2>&1 | head -1
    ucx_info -v 2>&1 | head -2
    env | grep -E '^(UCX_|GDRPIPE_|OMPI_MCA_)' | sort
} > "$out/env.txt"

run() { # label logfile cmd...
    local label=$1 log=$2
    shift 2
    echo "== $label" | tee -a "$out/summary.txt"
    "$@" > "$log" 2>&1
    local rc=$?
    grep -E '^(#|[0-9])' "$log" >> "$out/summary.txt"
    if [ $rc -ne 0 ]; then
        echo "   FAILED (exit $rc), see $log" | tee -a "$out/summary.txt"
        failed=$((failed + 1))
    fi
    echo >> "$out/summary.txt"
}

for b in $benches; do
    for p in $paths; do
        if [ "$p" = auto ]; then
            run "$b gdrpipe auto" "$out/$b.auto.log" \
                env -u UCX_GDRPIPE_PATH RUN_MPI_PRELOAD="$plugin" UCX_TLS=gdrpipe,self \
                "$run_mpi" "$build/bench/gdrpipe_$b" -d cuda "$@" D D
        else
            run "$b gdrpipe $p" "$out/$b.$p.log" \
                env UCX_GDRPIPE_PATH="$p" RUN_MPI_PRELOAD="$plugin" UCX_TLS=gdrpipe,self \
                "$run_mpi" "$build/bench/gdrpipe_$b" -d cuda "$@" D D
        fi
    done
    if [ $ref = 1 ]; then
        run "$b sm (no plugin)" "$out/$b.sm.log" \
            env UCX_TLS=posix,cma,self "$run_mpi" "$build/bench/gdrpipe_$b" -d cuda "$@" D D
    fi
done
if [ $verify = 1 ]; then
    run "mpi_verify 1 GiB" "$out/mpi_verify.log" \
        env RUN_MPI_PRELOAD="$plugin" UCX_TLS=gdrpipe,self \
        "$run_mpi" "$build/test/integration/mpi_verify" -d cuda --max 1G --realloc
fi
echo "logs: $out (summary.txt); failed runs: $failed"
exit $failed
