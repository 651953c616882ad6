#!/bin/bash
# link-down.sh RUN_MPI PROGRAM [ARGS...]
#
# A data link that goes down in the middle of a job: RUN_MPI (run-mpi.sh)
# starts PROGRAM with 2 ranks on 2 hosts (hosts.sh) whose UCX traffic goes
# over a data network of its own, the launcher's over the management network.
# Once the second host's data interface has received MIN_MB (default 16) MiB,
# that interface goes down. The job must then end by itself, with gdrpipe's
# "endpoint ... failed" message (UCX_GDRPIPE_TCP_TIMEOUT bounds the wait for
# the silent peer, UCX_GDRPIPE_UNHANDLED_EP_ERROR ends the rank that has no
# handler), not run into run-mpi.sh's time limit.
#
# PROGRAM must keep sending for longer than the job may take to notice.
# Needs root (network namespaces); exit status 77 (skipped) without it.
set -u
run_mpi=${1:?usage: link-down.sh RUN_MPI PROGRAM [ARGS...]}
shift
if [ "$(id -u)" != 0 ]; then
    echo "link-down.sh: needs root (network namespaces): skipped" >&2
    exit 77
fi
min=$(( ${MIN_MB:-16} * 1048576 ))
log=$(mktemp)
cut=$(mktemp)

# the hosts' namespaces: hosts.sh writes their prefix (host i is <prefix>i)
pfx_file=$(mktemp)
trap 'rm -f "$log" "$cut" "$cut.t" "$pfx_file"' EXIT
GP_HOSTS_PREFIX_FILE=$pfx_file RUN_MPI_HOSTS=2 RUN_MPI_NP=2 RUN_MPI_DATA_NET=1 \
    sh "$run_mpi" "$@" > "$log" 2>&1 &
job=$!

ns=""
while kill -0 "$job" 2>/dev/null; do
    if [ -z "$ns" ]; then
        [ ! -s "$pfx_file" ] || ns="$(cat "$pfx_file")2"
    else
        rx=$(ip netns exec "$ns" cat /sys/class/net/data0/statistics/rx_bytes 2>/dev/null)
        if [ "${rx:-0}" -ge "$min" ]; then
            ip -n "$ns" link set data0 down && date +%s > "$cut.t" &&
                echo "link-down.sh: h2's data link down after $rx bytes" > "$cut"
            break
        fi
    fi
    sleep 0.2
done
wait "$job"
rc=$?
end=$(date +%s)
[ "$rc" -ne 77 ] || { cat "$log"; exit 77; }   # hosts.sh: no namespaces here
cat "$log"
cat "$cut"
if [ ! -s "$cut" ]; then
    echo "link-down.sh: FAIL: the job ended (status $rc) before its data link went down"
    exit 1
fi
if grep -q "run-mpi.sh: timed out" "$log"; then
    echo "link-down.sh: FAIL: the job did not end after its data link went down"
    exit 1
fi
n=$(grep -c "gdrpipe: endpoint .* failed" "$log")
# (information only: the verdict does not depend on the machine's speed)
echo "link-down.sh: job status $rc, $((end - $(cat "$cut.t"))) s after the link went down;" \
    "ranks that reported their endpoint failed: $n"
[ "$rc" -ne 0 ] && [ "$n" -ge 1 ]
