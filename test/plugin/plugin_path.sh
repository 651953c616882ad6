#!/bin/bash
# plugin_path.sh MODULE_DIR: UCX 1.22+ finds the transport through
# UCX_PLUGIN_PATH alone (no LD_PRELOAD): ucx_info lists its component and
# transport, and a UCP program started that way selects it.
set -u
dir=${1:?usage: plugin_path.sh MODULE_DIR}
[ -e "$dir/libuct_gdrpipe.so.0" ] || { echo "FAIL: no $dir/libuct_gdrpipe.so.0"; exit 1; }
unset LD_PRELOAD
out=$(UCX_PLUGIN_PATH=$dir timeout 60 ucx_info -d 2>&1)
if ! printf '%s\n' "$out" | grep -q 'Transport: gdrpipe'; then
    echo "FAIL: ucx_info -d with UCX_PLUGIN_PATH=$dir lists no gdrpipe transport:"
    printf '%s\n' "$out" | grep -E 'Component|Transport|gdrpipe' | head -20
    exit 1
fi
# without the path, the same ucx_info knows nothing of it
if UCX_PLUGIN_PATH= timeout 60 ucx_info -d 2>&1 | grep -q 'Transport: gdrpipe'; then
    echo "FAIL: gdrpipe listed without UCX_PLUGIN_PATH (preloaded by something else?)"
    exit 1
fi
echo "PASS: UCX found gdrpipe through UCX_PLUGIN_PATH"
