#!/bin/sh
# agent.sh HOST COMMAND-LINE: Open MPI's remote shell for the hosts of
# hosts.sh (--mca plm_rsh_agent): runs COMMAND-LINE with sh in HOST's
# network namespace, under a UTS namespace with HOST's name, as ssh would
# run it on that machine.
set -u
host=${1:?usage: agent.sh HOST COMMAND-LINE}
shift
case "$host" in
h[0-9]*) ;;
*) echo "agent.sh: unknown host $host (h1, h2, ...)" >&2; exit 255 ;;
esac
: "${GP_HOSTS_PREFIX:?agent.sh: GP_HOSTS_PREFIX is not set (run under hosts.sh)}"
exec ip netns exec "$GP_HOSTS_PREFIX${host#h}" unshare --uts -- sh -c "hostname $host && $*"
