# common.sh -- sourced by the GPU-machine scripts of ci/device/ (bench.sh,
# proof-sweeps.sh) from the repository root: the bundled Debian Open MPI/UCX,
# the build carried in .device/, the log folder, and step(), which runs one
# check with a time limit and keeps its log.
# shellcheck shell=bash disable=SC2034
# DEVICE_BUILD: the build to run (default .device/build; a copy trimmed to
# the binaries, without objects, keeps what is carried small)
B=${DEVICE_BUILD:-$PWD/.device/build}
for need in .device/bundle/env.sh "$B/plugin/libuct_gdrpipe.so"; do
    if [ ! -e "$need" ]; then
        echo "ci/device: $need is missing: build .device/ with ci/device/build.sh on Debian 12" \
            "and carry .device/bundle and .device/run or .device/build (shared/device/README.md)" >&2
        exit 2
    fi
done
# shellcheck source=/dev/null
. .device/bundle/env.sh
# the bundle's own Open MPI components: gdrpipe-run puts its component folder
# before the caller's path, or before the path of the Open MPI it was built
# against, which on the GPU machine would be the host's other Open MPI
_cp=$OPAL_PREFIX/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
[ ! -d "$_cp" ] || export OMPI_MCA_mca_base_component_path=${OMPI_MCA_mca_base_component_path:-$_cp}
unset _cp
P=$B/plugin/libuct_gdrpipe.so
OUT=${OUT:-/tmp/gdrpipe-out}
mkdir -p "$OUT"
export UCX_WARN_UNUSED_ENV_VARS=n
fails=0
step() {   # step NAME TIMEOUT CMD...  (the last $TAIL lines of output are echoed)
    local name=$1 t=$2; shift 2
    echo "=== $name"
    local s=$SECONDS
    timeout --kill-after=5 "$t" "$@" > "$OUT/cur.log" 2>&1
    local rc=$?
    # no process of a timed-out step may stay: the ranks of a killed sweep
    # would keep polling on the cores the next step pins its ranks to, and
    # slow its transfers to the scheduler's time slices
    [ $rc -lt 124 ] || pkill -9 -f "$B/" 2>/dev/null
    { echo "=== $name"; cat "$OUT/cur.log"; } >> "$OUT/steps.log"
    [ "${TAIL:-3}" -eq 0 ] || tail -n "${TAIL:-3}" "$OUT/cur.log"
    echo "=== $name: rc=$rc ($((SECONDS - s)) s)" | tee -a "$OUT/steps.rc"
    [ $rc -eq 0 ] || { fails=$((fails + 1)); grep -E "FAIL|ERROR" "$OUT/cur.log" | head -3; }
}
# the real driver (tests that load it by path) and the verifiers
REAL=
for f in /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1; do
    [ -n "$REAL" ] || [ ! -e "$f" ] || REAL=$f
done
V=$B/test/integration/ucp_verify
M=$B/test/integration/mpi_verify
# the MPI command line of bench/RESULTS.md: 2 ranks (rank r on GPU r when
# there are two), bound to cores, only pml ucx carrying data
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca pml ucx
    --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ^ucx --mca btl "^vader,tcp,openib,uct,ofi")
GP=(-x "LD_PRELOAD=$P" -x "UCX_TLS=gdrpipe,self")
# a process of its own through the plugin (UCP programs)
PRE=(env "LD_PRELOAD=$P" "UCX_TLS=gdrpipe,self")
