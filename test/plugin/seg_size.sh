#!/bin/bash
# seg_size.sh PLUGIN -- two ucx_perftest processes whose UCX_GDRPIPE_SEG_SIZE
# differ: the connection must fail with one error naming the setting, never
# deliver truncated or corrupt messages; equal sizes, and different
# UCX_GDRPIPE_FIFO_SIZE, must work.
set -u
source "$(dirname "$0")/listen.sh"
plugin=$1
export LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_WARN_UNUSED_ENV_VARS=n
port=$((20000 + ($$ + 7919) % 20000))
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run VAR SERVER_VALUE CLIENT_VALUE EXPECT(ok|refused)
run() {
    port=$((port + 1))
    env UCX_GDRPIPE_$1=$2 timeout 20 ucx_perftest $NOMPI -t tag_bw -s 4096 -n 200 -p $port \
        >"$tmp/srv" 2>&1 &
    local srv=$!
    wait_listening $port $srv
    env UCX_GDRPIPE_$1=$3 timeout 20 ucx_perftest 127.0.0.1 $NOMPI -t tag_bw -s 4096 -n 200 \
        -p $port >"$tmp/cli" 2>&1
    local rc=$?
    # a client that finished leaves the server to finish too (on a loaded
    # machine it may take a while: its own timeout bounds it); after a
    # refusal the server would wait for a client forever
    [ $rc -eq 0 ] || kill $srv 2>/dev/null
    wait $srv
    local src=$?
    local what="server $1=$2, client $1=$3"
    if grep -q "corrupt length header" "$tmp/srv" "$tmp/cli"; then
        echo "FAIL - $what: a corrupt element was delivered"
        fail=1
    elif [ "$4" = ok ]; then
        if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "^Final:" "$tmp/cli"; then
            echo "ok   - $what: $(grep '^Final:' "$tmp/cli" | tr -s ' ')"
            return
        fi
        echo "FAIL - $what: expected to work (client $rc, server $src)"
        fail=1
    else
        local n
        n=$(cat "$tmp/srv" "$tmp/cli" | grep -c "UCX_GDRPIPE_SEG_SIZE")
        if [ $rc -ne 0 ] && [ "$n" -ge 1 ] && ! grep -q "^Final:" "$tmp/cli"; then
            echo "ok   - $what: refused: $(grep -h -m1 "UCX_GDRPIPE_SEG_SIZE" "$tmp/srv" "$tmp/cli" | head -1)"
            return
        fi
        echo "FAIL - $what: expected a refusal naming UCX_GDRPIPE_SEG_SIZE (client $rc, server $src)"
        fail=1
    fi
    echo "--- server"; tail -8 "$tmp/srv"; echo "--- client"; tail -8 "$tmp/cli"
}
run SEG_SIZE 256 8192 refused
run SEG_SIZE 8192 256 refused
run SEG_SIZE 256 256 ok
run FIFO_SIZE 2 256 ok
run FIFO_SIZE 256 2 ok
exit $fail
