#!/bin/bash
# test-all.sh -- build gdrpipe and run the whole test suite:
#   1. release-style build with -Werror: unit, simulator, UCP/MPI integration tests
#   2. ASan/UBSan build: unit and simulator tests, then ucp_verify with
#      LeakSanitizer (suite leakcheck: host and simulated device memory, each
#      GPU data path, repeated init/cleanup back to the baseline)
#   3. valgrind over the unit tests that fit it and over ucp_verify
# Prints one closing line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
t_start=$(date +%s)
root=$PWD
jobs=$(nproc)
logdir=${GDRPIPE_TEST_LOGS:-$root/build-logs}
# Time limits are there to catch hangs, not to judge speed: on a shared,
# loaded 2-core machine a test may take several times its idle time, so every
# limit is multiplied (valgrind's setup already has its own x10 on top).
tmult=${GDRPIPE_TEST_TIMEOUT_MULT:-3}
mkdir -p "$logdir"
total_pass=0
total_fail=0
rc=0

run_suites() {   # run_suites <builddir> <label> <meson test args...>
    local dir=$1 label=$2 setup="" a prev=""; shift 2
    for a in "$@"; do [ "$prev" = --setup ] && setup=-$a; prev=$a; done
    local m=$tmult
    [ "$setup" = -valgrind ] && m=$((10 * tmult))
    meson test -C "$dir" --print-errorlogs --timeout-multiplier "$m" "$@" || rc=1
    count "$dir" "$label" "$setup"
}

count() {   # count <builddir> <label> [-setup]: tally the last `meson test` run
    local json=$1/meson-logs/testlog${3:-}.json p f
    [ -f "$json" ] || { echo "no test log in $1"; rc=1; return; }
    p=$(grep -c '"result": "OK"' "$json" || true)
    f=$(grep -c '"result": "\(FAIL\|TIMEOUT\|ERROR\|UNEXPECTEDPASS\)"' "$json" || true)
    echo "== $2: $p passed, $f failed"
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    cp "$1/meson-logs/testlog${3:-}.txt" "$logdir/$2.txt" 2>/dev/null || true
}

shm_before=$(ls /dev/shm | wc -l)

echo "== build (warnings are errors)"
meson setup build-ci --wipe -Dwerror=true -Dbuildtype=debugoptimized >/dev/null ||
    meson setup build-ci -Dwerror=true -Dbuildtype=debugoptimized || exit 1
meson compile -C build-ci -j "$jobs" || exit 1

echo "== tests"
run_suites build-ci unit --num-processes "$jobs" --suite unit --suite cudasim
run_suites build-ci integration --num-processes 1 --suite integration

echo "== sanitizer build (address, undefined)"
meson setup build-asan --wipe -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debug >/dev/null ||
    meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug || exit 1
meson compile -C build-asan -j "$jobs" || exit 1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
run_suites build-asan asan --num-processes "$jobs" --suite unit --suite cudasim
run_suites build-asan asan-leakcheck --num-processes 1 --suite leakcheck
unset UBSAN_OPTIONS ASAN_OPTIONS

echo "== valgrind"
run_suites build-ci valgrind --num-processes "$jobs" --setup valgrind --suite valgrind

shm_after=$(ls /dev/shm | wc -l)
if [ "$shm_after" -gt "$shm_before" ]; then
    echo "== /dev/shm gained entries during the tests:"; ls -la /dev/shm
    total_fail=$((total_fail + 1)); rc=1
fi

echo "tests took $(( $(date +%s) - t_start )) s (build included)"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ $rc -eq 0 ]
