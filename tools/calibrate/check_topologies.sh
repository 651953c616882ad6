#!/bin/bash
# Runs gdrpipe-calibrate on the CUDA simulator with three topologies and checks
# the qualitative decisions of the printed report, the SVG and a cache round
# trip. Usage: check_topologies.sh BUILD_DIR
set -u
build=${1:?usage: check_topologies.sh BUILD_DIR}
exe=$build/tools/calibrate/gdrpipe-calibrate
lib=$build/test/cudasim/libcuda.so.1
[ -x "$exe" ] || { echo "missing $exe"; exit 1; }
[ -f "$lib" ] || { echo "missing $lib"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The simulator's virtual clock: every copy takes its modeled time and no
# other, whatever else the machine is doing, so the decisions below follow
# from the topologies' parameters alone (docs/cudasim.md, "Virtual clock").
export UCX_GDRPIPE_CUDA_LIB=$lib GDRPIPE_SIM_DEVICES=2 GDRPIPE_SIM_CLOCK=virtual
common=(--max 16M --budget 1 -q)

# calib TOPO OUTFILE [args...]: runs the tool, fails on a non-zero exit
calib() {
    local topo=$1 out=$2
    shift 2
    GDRPIPE_SIM_TOPO=$topo "$exe" "${common[@]}" "$@" >"$out" 2>"$out.err"
    local rc=$?
    if [ $rc -ne 0 ]; then
        fail "$topo: exit $rc"; cat "$out" "$out.err"
    fi
    return $rc
}
# chosen path of every table row, one per line (rows: "size unit ... chosen margin")
chosen() { grep -E '^ +[0-9.]+ (B|KiB|MiB) ' "$1" | grep -oE '\b(direct|staged)\b'; }
crossover() { grep -E '^  crossover:' "$1"; }
# bytes of a "12.3 KiB" style size
to_bytes() { awk -v v="$1" -v u="$2" 'BEGIN { m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1; printf "%d", v * m }'; }

# nvlink: direct wins at every size (peer 8 us, 300 GB/s against two host
# copies of 10 us at 25 GB/s), no threshold
if calib nvlink "$work/nvlink.txt" --no-cache --svg "$work/nvlink.svg"; then
    crossover "$work/nvlink.txt" | grep -q 'none: direct at every size' || { fail "nvlink: crossover is not 'direct always'"; cat "$work/nvlink.txt"; }
    [ "$(chosen "$work/nvlink.txt" | sort -u)" = direct ] || fail "nvlink: staged chosen somewhere"
    [ "$(chosen "$work/nvlink.txt" | wc -l)" -ge 8 ] || fail "nvlink: fewer than 8 sizes measured"
    grep -q 'id="crossover-note"' "$work/nvlink.svg" || fail "nvlink: SVG lacks the crossover note"
fi

# nopeer: direct unavailable, staged everywhere
if calib nopeer "$work/nopeer.txt" --no-cache --svg "$work/nopeer.svg"; then
    grep -q 'peer access: no' "$work/nopeer.txt" || fail "nopeer: peer access reported"
    crossover "$work/nopeer.txt" | grep -q '0: staged at every size' || fail "nopeer: crossover is not 'staged always'"
    [ "$(chosen "$work/nopeer.txt" | sort -u)" = staged ] || fail "nopeer: direct chosen somewhere"
    grep -q 'direct fit: unavailable' "$work/nopeer.txt" || fail "nopeer: direct fit not unavailable"
    grep -q 'id="crossover-note"' "$work/nopeer.svg" || fail "nopeer: SVG lacks the crossover note"
fi

# pcie-p2p-slow: direct for small messages, staged for large ones. Direct is
# one peer copy (6 us + n / 3 GB/s); staged, two pipelined host copies
# (10 us + n / 10 GB/s each, overlapped chunk by chunk). The two meet where
# 6 us + n / 3 GB/s = 20 us + n / 10 GB/s plus the pipeline's first chunk:
# above 60 KB, and below 1 MiB for any of the calibration's chunk sizes.
if calib pcie-p2p-slow "$work/pcie.txt" --no-cache --svg "$work/pcie.svg"; then
    line=$(crossover "$work/pcie.txt")
    if [[ $line =~ ^\ \ crossover:\ +([0-9.]+)\ (B|KiB|MiB)\  ]]; then
        t=$(to_bytes "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
        { [ "$t" -ge 61440 ] && [ "$t" -le 1048576 ]; } ||
            fail "pcie-p2p-slow: crossover $t B outside the model's 60 KB .. 1 MiB"
    else
        fail "pcie-p2p-slow: no size threshold: $line"
    fi
    [ "$(chosen "$work/pcie.txt" | head -n 1)" = direct ] || fail "pcie-p2p-slow: smallest size not direct"
    [ "$(chosen "$work/pcie.txt" | tail -n 1)" = staged ] || fail "pcie-p2p-slow: largest size not staged"
    grep -q 'id="crossover"' "$work/pcie.svg" || fail "pcie-p2p-slow: SVG lacks the crossover line"
    grep -q '</svg>' "$work/pcie.svg" || fail "pcie-p2p-slow: SVG incomplete"
fi
[ $fails -eq 0 ] || cat "$work/pcie.txt"

# the virtual clock makes the measurement repeatable: a second run prints the
# same table
if calib pcie-p2p-slow "$work/pcie2.txt" --no-cache; then
    diff <(grep -E '^ +[0-9.]+ (B|KiB|MiB) ' "$work/pcie.txt") <(grep -E '^ +[0-9.]+ (B|KiB|MiB) ' "$work/pcie2.txt") \
        >/dev/null || fail "pcie-p2p-slow: a second run on the virtual clock measured another table"
fi

# cache round trip: measure + store, read back, --force measures again
cdir=$work/cache
if calib nopeer "$work/c1.txt" --cache-dir "$cdir" --svg "$work/c.svg"; then
    grep -q 'source:     measured now' "$work/c1.txt" || fail "cache 1: not measured"
    grep -q "cache: stored in $cdir/crossover-" "$work/c1.txt" || fail "cache 1: not stored"
    ls "$cdir"/crossover-*.txt >/dev/null 2>&1 || fail "cache 1: no cache file"
fi
if calib nopeer "$work/c2.txt" --cache-dir "$cdir" --svg "$work/c.svg"; then
    grep -q 'source:     cache' "$work/c2.txt" || fail "cache 2: not read from the cache"
    grep -q "cache: read from $cdir/crossover-" "$work/c2.txt" || fail "cache 2: no 'read from'"
    # the cached table is the one the first call measured
    diff <(grep -E '^ +[0-9.]+ (B|KiB|MiB) ' "$work/c1.txt") <(grep -E '^ +[0-9.]+ (B|KiB|MiB) ' "$work/c2.txt") \
        >/dev/null || fail "cache 2: table differs from the stored one"
fi
if calib nopeer "$work/c3.txt" --cache-dir "$cdir" --svg "$work/c.svg" --force; then
    grep -q 'source:     measured now' "$work/c3.txt" || fail "cache 3: --force did not measure"
fi
# another topology has other peer access -> another key -> measured, not cached
if calib nvlink "$work/c4.txt" --cache-dir "$cdir" --svg "$work/c.svg"; then
    grep -q 'source:     measured now' "$work/c4.txt" || fail "cache 4: other peer relation used the cache"
fi

# usage and failure exit codes
"$exe" --max 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--max 0: exit status not 2"
"$exe" -a 0 -b 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "-a 0 -b 0: exit status not 2"
"$exe" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "--bogus: exit status not 2"
GDRPIPE_SIM_DEVICES=1 GDRPIPE_SIM_TOPO=fast "$exe" --no-cache >"$work/one.txt" 2>&1
[ $? -eq 1 ] || fail "1 device: exit status not 1"
grep -q 'needs 2 devices' "$work/one.txt" || fail "1 device: no explanation"
UCX_GDRPIPE_CUDA_LIB=$work/no-such-libcuda.so "$exe" --no-cache >"$work/off.txt" 2>&1
[ $? -eq 1 ] || fail "CUDA off: exit status not 1"
grep -q 'CUDA is not available: .*no-such-libcuda' "$work/off.txt" || fail "CUDA off: no reason"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all checks passed"
