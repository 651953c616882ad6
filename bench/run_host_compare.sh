#!/bin/bash
# Run gdrpipe_latency / gdrpipe_bw / gdrpipe_bibw over the gdrpipe plugin and
# over Debian's own shared-memory transports ("sm" = posix,cma,self) in the
# same run, and print each pair of tables side by side.
#
# Usage: bench/run_host_compare.sh [-b BUILDDIR] [-p PLUGIN] [-o OUTDIR]
#                                  [-t "TLS ..."] [-- BENCH_ARGS...]
#   -b BUILDDIR  meson build directory (default: build)
#   -p PLUGIN    libuct_gdrpipe.so (default: BUILDDIR/plugin/libuct_gdrpipe.so);
#                "none" runs only the sm column
#   -o OUTDIR    where the raw logs go (default: a new directory in /tmp)
#   BENCH_ARGS   passed to every benchmark (e.g. -m 1:1M -i 1000); default none
# Environment: GDRPIPE_TLS (default gdrpipe,self), SM_TLS (default
# posix,cma,self), RUN_MPI_TIMEOUT (per run, default 600).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=build plugin="" out=""
while getopts "b:p:o:h" opt; do
    case $opt in
    b) build=$OPTARG ;;
    p) plugin=$OPTARG ;;
    o) out=$OPTARG ;;
    h) sed -n '2,16p' "$0"; exit 0 ;;
    *) exit 1 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
plugin=${plugin:-$build/plugin/libuct_gdrpipe.so}
out=${out:-$(mktemp -d /tmp/gdrpipe-compare.XXXXXX)}
mkdir -p "$out"
run_mpi=$here/../test/integration/run-mpi.sh
export RUN_MPI_TIMEOUT=${RUN_MPI_TIMEOUT:-600}

columns=()
if [ "$plugin" != none ]; then
    [ -f "$plugin" ] || { echo "no plugin at $plugin (use -p, or -p none)" >&2; exit 1; }
    columns+=(gdrpipe)
fi
columns+=(sm)

for b in latency bw bibw; do
    prog=$build/bench/gdrpipe_$b
    for t in "${columns[@]}"; do
        log=$out/$b.$t.log
        if [ "$t" = gdrpipe ]; then
            RUN_MPI_PRELOAD=$(realpath "$plugin") UCX_TLS=${GDRPIPE_TLS:-gdrpipe,self} \
                "$run_mpi" "$prog" "$@" > "$log"
        else
            UCX_TLS=${SM_TLS:-posix,cma,self} "$run_mpi" "$prog" "$@" > "$log"
        fi
    done
    unit=$(grep -m1 '^# Size' "$out/$b.sm.log" | sed 's/^# Size *//')
    echo "# $b: $unit  (logs in $out)"
    # join the data rows of every column on the size
    awk -v cols="${columns[*]}" '
        BEGIN { n = split(cols, c, " ") }
        FNR == 1 { f++ }
        /^[0-9]/ { v[$1, f] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        END {
            printf "%-10s", "# Size"
            for (i = 1; i <= n; i++) printf "%16s", c[i]
            if (n == 2) printf "%12s", c[1] "/" c[2]
            printf "\n"
            for (j = 1; j <= k; j++) {
                s = order[j]; printf "%-10s", s
                for (i = 1; i <= n; i++) printf "%16s", ((s, i) in v) ? v[s, i] : "-"
                if (n == 2 && v[s, 2] + 0 > 0) printf "%12.2f", v[s, 1] / v[s, 2]
                printf "\n"
            }
        }' $(for t in "${columns[@]}"; do echo "$out/$b.$t.log"; done)
    echo
done
