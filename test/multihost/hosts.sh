#!/bin/sh
# hosts.sh N COMMAND [ARGS...]
#
# Makes N "hosts" on this machine, h1 ... hN, and runs COMMAND in h1. Each
# host is a network namespace (ip netns) with its own interface, address
# 10.77.0.<i>/24 and name resolution (/etc/netns/<ns>/hosts: h1 ... hN),
# joined by a bridge in a namespace of its own; processes started in a host
# also get a UTS namespace with its host name. UCX then sees different host
# names, addresses and MAC addresses, so ranks on different hosts reach each
# other only over the network (UCX's tcp), as on separate machines.
#
# agent.sh (beside this file) starts a process on another host: give it to
# Open MPI as its remote shell (--mca plm_rsh_agent .../agent.sh); it finds
# the namespaces through GP_HOSTS_PREFIX, which this script exports.
#
# GP_HOSTS_DATA_NET=1 gives each host a second interface, data0, with
# address 10.78.0.<i>/24 on a second bridge: a data network beside the
# first (the management network, where the launcher's connections go), as
# clusters have; a test can then take one host's data link down
# (ip -n <ns> link set data0 down) while the launcher still reaches it.
#
# GP_HOSTS_PREFIX_FILE names a file this script writes the namespaces'
# prefix into (host i is namespace <prefix>i) once the hosts exist.
#
# Everything is removed on exit, also when COMMAND fails or this script is
# killed (TERM, INT, HUP): the processes left in the namespaces, the
# namespaces, their /etc/netns entries. Needs root and iproute2; exit status
# 77 (skip) without them, else COMMAND's.
set -u
n=${1:?usage: hosts.sh N COMMAND [ARGS...]}
shift
if [ "$(id -u)" != 0 ]; then
    echo "hosts.sh: needs root (network namespaces): skipped" >&2
    exit 77
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
    echo "hosts.sh: needs ip (iproute2) and unshare (util-linux): skipped" >&2
    exit 77
fi

pfx="gp$$h"          # host i is namespace ${pfx}i
sw="gp$$sw"          # the bridge's namespace
export GP_HOSTS_PREFIX="$pfx"

cleanup() {
    for ns in $(seq 1 "$n" | sed "s/^/$pfx/") "$sw"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
}
trap cleanup EXIT
trap 'exit 143' INT TERM HUP

if ! ip netns add "$sw" 2>/dev/null; then
    echo "hosts.sh: cannot create a network namespace here: skipped" >&2
    exit 77
fi
data=${GP_HOSTS_DATA_NET:-0}
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up &&
    { [ "$data" = 0 ] || { ip -n "$sw" link add br1 type bridge && ip -n "$sw" link set br1 up; }; } || {
    echo "hosts.sh: cannot create a bridge" >&2
    exit 1
}
names=""
for i in $(seq 1 "$n"); do
    names="$names
10.77.0.$i h$i"
done
for i in $(seq 1 "$n"); do
    ns="$pfx$i"
    ip netns add "$ns" &&
        ip link add "v$i" netns "$ns" type veth peer name "p$i" netns "$sw" &&
        ip -n "$sw" link set "p$i" master br0 up &&
        ip -n "$ns" addr add "10.77.0.$i/24" dev "v$i" &&
        ip -n "$ns" link set "v$i" up &&
        ip -n "$ns" link set lo up &&
        { [ "$data" = 0 ] || {
            ip link add data0 netns "$ns" type veth peer name "d$i" netns "$sw" &&
            ip -n "$sw" link set "d$i" master br1 up &&
            ip -n "$ns" addr add "10.78.0.$i/24" dev data0 &&
            ip -n "$ns" link set data0 up; }; } || {
        echo "hosts.sh: cannot set up host h$i" >&2
        exit 1
    }
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1 localhost%s\n' "$names" > "/etc/netns/$ns/hosts"
    printf 'h%s\n' "$i" > "/etc/netns/$ns/hostname"
done

[ -z "${GP_HOSTS_PREFIX_FILE:-}" ] || echo "$pfx" > "$GP_HOSTS_PREFIX_FILE"
ip netns exec "${pfx}1" unshare --uts -- sh -c 'hostname h1 && exec "$@"' hosts.sh "$@"
