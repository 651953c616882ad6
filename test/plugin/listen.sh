# Sourced by the ucx_perftest scripts.
# NOMPI: "-P 0" where ucx_perftest was built with MPI (Debian 13's), which
# otherwise wants an MPI launcher; empty where it has no MPI mode (Debian 12's
# does not take -P).
NOMPI=
if [[ $(ucx_perftest -h 2>&1) == *'-P <0|1>'* ]]; then
    NOMPI="-P 0"
fi
# wait_listening PORT PID: returns once
# a socket listens on PORT (/proc/net/tcp*, hexadecimal port, state 0A), or
# PID exited, or 20 s passed: a client started before its server listens
# fails, and a loaded machine can take long to start one.
wait_listening() {
    local hex i
    hex=$(printf ':%04X ' "$1")
    for ((i = 0; i < 200; ++i)); do
        grep -q "$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
