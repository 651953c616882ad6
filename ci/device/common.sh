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
    # no process of a timed-out step may stay: the ranks of a killed sweep
    # would keep polling on the cores the next step pins its ranks to (most
    # likely what made the steps after a time-out in runs 29 and 37 measure
    # 10-15 ms staged transfers)
    [ $rc -lt 124 ] || pkill -9 -f "$B/" 2>/dev/null
    cat "$OUT/cur.log" >> "$OUT/steps.log"
    tail -n "${TAIL:-3}" "$OUT/cur.log"
    echo "=== $name: rc=$rc ($((SECONDS - s)) s)"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -E "FAIL|ERROR" "$OUT/cur.log" | head -3; }
}
# the real driver (tests that load it by path) and the verifiers
REAL=$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null | head -1)
V=$B/test/integration/ucp_verify
M=$B/test/integration/mpi_verify
# the MPI benchmark command lines of bench/RESULTS.md (2 ranks, one GPU each)
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx --mca btl ^vader,tcp,openib,uct"
GP="-x LD_PRELOAD=$P -x UCX_TLS=gdrpipe,self"
PUT="-x UCX_RNDV_SCHEME=put_zcopy"
LAT="$B/bench/gdrpipe_latency -d cuda -i 1000 -x 100 -m 0:4M D D"
BW="$B/bench/gdrpipe_bw -d cuda -i 20 -x 2 -m 64K:64M D D"
BIBW="$B/bench/gdrpipe_bibw -d cuda -i 20 -x 2 -m 64K:64M D D"
