#!/bin/bash
# perftest.sh PLUGIN -- Debian's ucx_perftest, server and client as two
# processes, through gdrpipe only (UCX_TLS=gdrpipe,self); out of MPI mode
# ($NOMPI, listen.sh).
set -u
source "$(dirname "$0")/listen.sh"
plugin=$1
export LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_WARN_UNUSED_ENV_VARS=n
port=$((20000 + $$ % 20000))
fail=0
run() {   # run "args"
    port=$((port + 1))
    timeout 240 ucx_perftest $1 $NOMPI -p $port >/tmp/gp-perf-srv.$$ 2>&1 &
    local srv=$!
    wait_listening $port $srv
    local out
    out=$(timeout 240 ucx_perftest 127.0.0.1 $1 $NOMPI -p $port 2>&1)
    local rc=$?
    wait $srv
    local src=$?
    if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^Final:" <<< "$out"; then
        echo "ok   - ucx_perftest $1 | $(grep '^Final:' <<< "$out" | tr -s ' ')"
    else
        echo "FAIL - ucx_perftest $1 (client $rc, server $src)"
        echo "$out" | tail -5; tail -5 /tmp/gp-perf-srv.$$
        fail=1
    fi
    rm -f /tmp/gp-perf-srv.$$
}
run "-t tag_lat -s 8 -n 20000"
run "-t tag_bw -s 4194304 -n 200"
run "-t tag_bw -s 65536 -n 2000"
run "-t ucp_put_bw -s 1048576 -n 500"
run "-t ucp_get -s 1048576 -n 500"
run "-t am_lat -x gdrpipe -d memory -s 8 -n 20000"
run "-t am_bw -x gdrpipe -d memory -s 4096 -D bcopy -n 20000"
run "-t put_bw -x gdrpipe -d memory -s 65536 -D zcopy -n 2000"
run "-t get -x gdrpipe -d memory -s 65536 -D zcopy -n 2000"
exit $fail
