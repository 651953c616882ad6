#!/bin/bash
# check_show.sh BUILD_DIR SOURCE_DIR -- gdrpipe-calibrate --show on cache
# files recorded on the H200 machine (bench/results/): the rule the plugin
# takes from each, and errors for files that are not caches.
set -u
exe=$1/tools/calibrate/gdrpipe-calibrate
res=$2/bench/results
fail=0
expect() {   # expect FILE RULE
    local out
    out=$("$exe" --show "$res/$1") || { echo "FAIL: --show $1 exited $?"; fail=1; return; }
    if grep -qxF "rule the plugin uses (up to 67108864 bytes): $2" <<<"$out"; then
        echo "ok: $1: $2"
    else
        echo "FAIL: $1: expected rule '$2', got:"
        grep "^rule" <<<"$out"
        fail=1
    fi
}
# a host -> GPU calibration (1 x H200) never checked through a peer: its own
# threshold
expect h200-host-to-gpu-put-unchecked-cache.txt "404 bytes (direct below, staged from)"
# the same direction checked in 7 classes: per-class offsets give direct up
# to the top of the range, where the calibration measured staged faster
expect h200-host-to-gpu-put-checked-cache.txt "52464873 bytes (direct below, staged from)"
# two host -> GPU proof sweeps on 2 x H200 that met the bound: the
# calibration said "staged below 248137 / 212443 bytes"; checked through the
# peer, the rule the sweep then met the bound with
expect h200x2-host-to-gpu-put-cache.txt "38554855 bytes (direct below, staged from)"
expect h200x2-host-to-gpu-put-never-cache.txt "never (direct at every size)"
# not a cache file / a damaged one / missing: exit 1 with a reason
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo hello > "$tmp/not-a-cache.txt"
sed 's/^threshold .*/threshold 1/' "$res/h200-host-to-gpu-put-checked-cache.txt" > "$tmp/damaged.txt"
for f in "$tmp/not-a-cache.txt" "$tmp/damaged.txt" "$tmp/missing.txt"; do
    if err=$("$exe" --show "$f" 2>&1 >/dev/null); then
        echo "FAIL: --show $(basename "$f") succeeded"
        fail=1
    else
        echo "ok: $(basename "$f"): $err"
    fi
done
"$exe" --show 2>/dev/null && { echo "FAIL: --show without files succeeded"; fail=1; }
exit $fail
