#!/bin/sh
# odd-env.sh VAR=VALUE... -- PROGRAM [ARGS...]: runs one MPI rank of PROGRAM;
# the odd ranks of the job get the settings first (ranks configured
# differently in one job).
rank=${OMPI_COMM_WORLD_RANK:-0}
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    if [ $((rank % 2)) -eq 1 ]; then
        export "${1?}"
    fi
    shift
done
[ "${1:-}" = "--" ] && shift
exec "$@"
