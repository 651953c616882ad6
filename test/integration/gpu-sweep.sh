#!/bin/bash
# GPU-machine data verification with raw UCP: ucp_verify between 2 processes,
# device buffers (-d cuda, rank r on GPU r), every size 0 B .. --max (powers
# of two, +-1, primes, --max itself), offsets, 64 in flight, D->H / H->D and
# free/re-allocate; once per forced data path and UCP protocol generation.
#
# Usage: test/integration/gpu-sweep.sh [-b BUILDDIR] [-o OUTDIR] [-e ENVSH]
#            [-P "direct staged"] [-V "n y"] [-m MAX] [-t SECONDS]
#   -b BUILDDIR  meson build directory (default: build)
#   -o OUTDIR    where logs go (default: $OUT, else ./device-logs)
#   -e ENVSH     environment to source first (default: .device/bundle/env.sh
#                if it exists; "none" to skip)
#   -P PATHS     UCX_GDRPIPE_PATH values (default: direct staged)
#   -V PROTOS    UCX_PROTO_ENABLE values: n = protocol v1, y = v2 (default: n y)
#   -m MAX       largest message (default 1G; ucp_verify takes at most 1G)
#   -t SECONDS   limit per run (default 280)
# Output: OUTDIR/ucp_verify.<path>.proto-<p>.log and OUTDIR/ucp-sweep.txt (the
# closing line of every run). Exit code: number of failed runs.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build out=${OUT:-./device-logs} envsh=$root/.device/bundle/env.sh
paths="direct staged" protos="n y" max=1G limit=280
while getopts "b:o:e:P:V:m:t:h" opt; do
    case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    e) envsh=$OPTARG ;;
    P) paths=$OPTARG ;;
    V) protos=$OPTARG ;;
    m) max=$OPTARG ;;
    t) limit=$OPTARG ;;
    h) sed -n '2,19p' "$0"; exit 0 ;;
    *) exit 1 ;;
    esac
done
if [ "$envsh" != none ] && [ -f "$envsh" ]; then
    # shellcheck disable=SC1090
    . "$envsh"
fi
plugin=$(realpath "$build/plugin/libuct_gdrpipe.so")
verify=$(realpath "$build/test/integration/ucp_verify")
mkdir -p "$out"
out=$(realpath "$out")
failed=0
for p in $paths; do
    for v in $protos; do
        log=$out/ucp_verify.$p.proto-$v.log
        echo "== ucp_verify -d cuda --max $max --realloc, UCX_GDRPIPE_PATH=$p UCX_PROTO_ENABLE=$v" |
            tee -a "$out/ucp-sweep.txt"
        start=$(date +%s)
        LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_WARN_UNUSED_ENV_VARS=n \
            UCX_GDRPIPE_PATH=$p UCX_PROTO_ENABLE=$v \
            timeout -k 10 "$limit" "$verify" -d cuda --max "$max" --realloc > "$log" 2>&1
        rc=$?
        tail -1 "$log" | tee -a "$out/ucp-sweep.txt"
        echo "   exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/ucp-sweep.txt"
        [ $rc -ne 0 ] && failed=$((failed + 1))
    done
done
echo "logs: $out (ucp-sweep.txt); failed runs: $failed"
exit $failed
