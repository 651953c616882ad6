#!/bin/bash
# crossover.sh -- on the GPU machine: the measured crossover between GPUs 0 and
# 1 (gdrpipe-calibrate, its SVG), the plugin's own per-pair calibration with
# THRESH=auto, and the proof sweep: direct vs staged vs auto at every size
# 1 B .. 64 MiB through the plugin, auto <= 1.05 x the faster path
# (bench/sweep_paths.sh). Logs and the SVG go to $OUT.
set -u
. "$(dirname "$0")/common.sh"
TAIL=40 step calibrate 120 $B/tools/calibrate/gdrpipe-calibrate -a 0 -b 1 \
    --cache-dir "$OUT/calib-cli" --svg "$OUT/crossover.svg"
# a fresh cache: the sweep's first run measures in the plugin (logged at INFO)
TAIL=40 step sweep 540 bench/sweep_paths.sh --iters 50 --reps 3 --calib-dir "$OUT/calib-plugin" "$B"
cp "$OUT"/calib-plugin/crossover-*.txt "$OUT"/calib-cli/crossover-*.txt "$OUT/" 2>/dev/null
echo "=== failed steps: $fails"
