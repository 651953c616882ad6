#!/bin/bash
# ep_params.sh EXE PLUGIN -- the preloaded plugin's ucp_ep_create with a
# caller's parameter struct shorter than this UCX's, ending at an
# inaccessible page (ep_params.c): the endpoint is created, and given the
# plugin's error handler (counted in the plugin's statistics, 1 of the 2
# endpoints: the other has the caller's own); with
# UCX_GDRPIPE_UNHANDLED_EP_ERROR=none, none is given one.
set -u
exe=$1 plugin=$2
fail=0
for action in exit none; do
    want=1
    [ "$action" = none ] && want=0
    out=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_GDRPIPE_CUDA_LIB=/nonexistent/libcuda.so.1 \
          UCX_GDRPIPE_UNHANDLED_EP_ERROR=$action UCX_GDRPIPE_STATS=y UCX_LOG_LEVEL=info \
          UCX_WARN_UNUSED_ENV_VARS=n timeout 60 "$exe" 2>&1)
    rc=$?
    got=$(printf '%s\n' "$out" | sed -n 's/.*endpoints given an error handler (UNHANDLED_EP_ERROR): \([0-9]*\);.*/\1/p' | head -1)
    if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
        echo "ok: UNHANDLED_EP_ERROR=$action: endpoints created, $got given the plugin's handler"
    else
        echo "FAIL: UNHANDLED_EP_ERROR=$action: exit $rc, ${got:-no} endpoints given the handler (want $want)"
        printf '%s\n' "$out" | tail -5
        fail=1
    fi
done
exit $fail
