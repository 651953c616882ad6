#!/bin/sh
# expect-lanes.sh RUN_MPI PROGRAM [ARGS...]: runs the program with run-mpi.sh
# (RUN_MPI_HOSTS > 1 in the environment) at UCX's info log level and checks
# the endpoint configurations UCP printed: an endpoint to a rank on another
# host carries tags over tcp alone (never gdrpipe's intra-host wire), and
# one to a rank on the same host over gdrpipe's wire. Exit status 77 when
# run-mpi.sh skipped.
set -u
run=${1:?usage: expect-lanes.sh RUN_MPI PROGRAM [ARGS...]}
shift
out=$(UCX_LOG_LEVEL=info sh "$run" "$@" 2>&1)
rc=$?
[ "$rc" -ne 77 ] || exit 77
if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$out" | tail -30
    echo "expect-lanes.sh: the run failed ($rc)" >&2
    exit 1
fi
# UCX 1.13 prints "ep_cfg[N]: tag(...)", 1.16 and later
# "<context> intra-node|inter-node|self cfg#N tag(...)"
cfgs=$(printf '%s\n' "$out" | grep -oE '(ep_cfg\[[0-9]+\]: |cfg#[0-9]+ )tag\([^)]*\)' |
       sed 's/^.*tag(/tag(/' | sort -u)
printf 'endpoint configurations seen:\n%s\n' "$cfgs"
remote=$(printf '%s\n' "$cfgs" | grep -c '^tag(tcp/[^ ]*)$')
local=$(printf '%s\n' "$cfgs" | grep -c 'gdrpipe/memory')
echo "tcp-only: $remote, with gdrpipe's wire: $local"
[ "$remote" -ge 1 ] || { echo "expect-lanes.sh: no endpoint went over tcp alone" >&2; exit 1; }
[ "$local" -ge 1 ] || { echo "expect-lanes.sh: no endpoint used gdrpipe's wire" >&2; exit 1; }
exit 0
