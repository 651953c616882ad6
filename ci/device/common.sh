# common.sh -- sourced by the GPU-machine scripts of ci/device/: the bundled
# Debian Open MPI/UCX, the build carried in .device/, the log folder, and
# step(), which runs one check with a time limit and keeps its log.
. .device/bundle/env.sh
B=$PWD/.device/build
P=$B/plugin/libuct_gdrpipe.so
OUT=${OUT:-/tmp/gdrpipe-out}
mkdir -p "$OUT"
export UCX_WARN_UNUSED_ENV_VARS=n
fails=0
step() {   # step NAME TIMEOUT CMD...  (TAIL lines of output are echoed)
    local name=$1 t=$2; shift 2
    echo "=== $name"
    local s=$SECONDS
    timeout --kill-after=5 "$t" "$@" > "$OUT/cur.log" 2>&1
    local rc=$?
    cat "$OUT/cur.log" >> "$OUT/steps.log"
    tail -n "${TAIL:-3}" "$OUT/cur.log"
    echo "=== $name: rc=$rc ($((SECONDS - s)) s)"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -E "FAIL|ERROR" "$OUT/cur.log" | head -3; }
}
