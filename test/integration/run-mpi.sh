#!/bin/sh
# Run an MPI program (2 ranks unless told) so that only pml ucx carries data, with the same
# switches for every integration test. The environment decides the transport:
#   RUN_MPI_PRELOAD  library preloaded into the ranks only (the gdrpipe
#                    plugin), not into mpirun itself
#   LD_PRELOAD       if set, forwarded as well
#   UCX_TLS          e.g. gdrpipe,self
#   UCX_*/GDRPIPE_*  forwarded to the ranks
#   RUN_MPI_TIMEOUT  seconds before the job is killed (default 300)
#   RUN_MPI_NP       number of ranks (default 2)
#   RUN_MPI_BTL      Open MPI's btl list (default ^vader,tcp,openib,uct,ofi:
#                    none carries data; ofi is out too, as its close sleeps
#                    a second in MPI_Finalize)
#   RUN_MPI_LAUNCHER shell script run in front of mpirun (gdrpipe-run of the
#                    build tree: its settings, preloads and component path)
#   RUN_MPI_HOSTS    N > 1: the ranks spread round-robin over N hosts made
#                    on this machine (test/multihost/hosts.sh: network and
#                    UTS namespaces; needs root, else exit 77 = skipped), so
#                    ranks 2k and 2k+1 are on different hosts
#   RUN_MPI_DATA_NET 1 (with RUN_MPI_HOSTS): UCX between the hosts on a data
#                    network of its own (data0), Open MPI's launcher on the
#                    first (GP_HOSTS_DATA_NET in hosts.sh)
# Fails if the run leaves new UCX/MPI/gdrpipe files in /dev/shm
# (RUN_MPI_SHM_CHECK=0 turns that off).
# Usage: run-mpi.sh PROGRAM [ARGS...]
set -u
np=${RUN_MPI_NP:-2}
limit=${RUN_MPI_TIMEOUT:-300}

# every UCX_*, GDRPIPE_* and LD_PRELOAD variable set here goes to the ranks
fwd=""
for v in $(env | sed -n 's/^\(UCX_[A-Za-z0-9_]*\|GDRPIPE_[A-Za-z0-9_]*\|LD_PRELOAD\|ASAN_OPTIONS\|UBSAN_OPTIONS\)=.*/\1/p'); do
    fwd="$fwd -x $v"
done

# only names a UCX/MPI/gdrpipe run could create: other jobs may be running
shm_list() {
    ls -A /dev/shm 2>/dev/null | grep -iE '^(ucx|gdrpipe|gp[-_]|ompi|vader|sm_segment|shm_|psm|opal|pmix)' | sort
}
shm_before=$(shm_list)

if [ -n "${RUN_MPI_PRELOAD:-}" ]; then
    fwd="$fwd -x LD_PRELOAD=$RUN_MPI_PRELOAD"
fi

hosts=${RUN_MPI_HOSTS:-1}
wrap=""
if [ "$hosts" -gt 1 ]; then
    mh=$(cd "$(dirname "$0")/../multihost" && pwd)
    per=$(( (np + hosts - 1) / hosts ))
    list=$(seq 1 "$hosts" | sed "s/.*/h&:$per/" | paste -sd, -)
    wrap="sh $mh/hosts.sh $hosts"
    fwd="$fwd --host $list --map-by node --mca plm_rsh_agent $mh/agent.sh"
    fwd="$fwd --mca oob_tcp_if_include 10.77.0.0/24"
    if [ "${RUN_MPI_DATA_NET:-0}" = 1 ]; then
        export GP_HOSTS_DATA_NET=1
        fwd="$fwd -x UCX_NET_DEVICES=data0"
    fi
fi

# osc: RUN_MPI_OSC, else the launcher's choice (gdrpipe-run leaves osc ucx
# out on Open MPI 4.1 only), else without one osc ucx left out
osc=${RUN_MPI_OSC:-}
[ -n "$osc" ] || [ -n "${RUN_MPI_LAUNCHER:-}" ] || osc=^ucx

# shellcheck disable=SC2086
$wrap timeout --kill-after=10 "$limit" \
    ${RUN_MPI_LAUNCHER:+sh "$RUN_MPI_LAUNCHER"} mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        ${osc:+--mca osc "$osc"} --mca btl "${RUN_MPI_BTL:-^vader,tcp,openib,uct,ofi}" \
        $fwd "$@"
rc=$?
[ "$rc" -ne 77 ] || exit 77
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "run-mpi.sh: timed out after ${limit}s" >&2
fi

shm_after=$(shm_list)
leaked=$({ printf '%s\n' "$shm_before"; echo /; printf '%s\n' "$shm_after"; } |
    awk '$0 == "/" { after = 1; next } !after { had[$0] = 1; next } $0 != "" && !($0 in had)')
if [ -n "$leaked" ] && [ "${RUN_MPI_SHM_CHECK:-1}" != 0 ]; then
    echo "run-mpi.sh: left in /dev/shm:" $leaked >&2
    [ "$rc" -eq 0 ] && rc=3
fi
exit "$rc"
