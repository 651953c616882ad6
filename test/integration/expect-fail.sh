#!/bin/sh
# expect-fail.sh MESSAGE COMMAND...: succeeds only when COMMAND fails without
# a crash (no SIGSEGV, SIGBUS or SIGABRT of a rank, no time limit) and its
# output holds MESSAGE: an error that ends a job the way it was meant to.
msg=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -20
if [ "$rc" -eq 0 ]; then
    echo "expect-fail.sh: the command succeeded; expected it to fail" >&2
    exit 1
fi
if [ "$rc" -ge 124 ] || printf '%s\n' "$out" | grep -qE 'Segmentation fault|Caught signal|signal 11|Bus error'; then
    echo "expect-fail.sh: the command crashed or timed out (exit status $rc)" >&2
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qF "$msg"; then
    echo "expect-fail.sh: exit status $rc, but no '$msg' in its output" >&2
    exit 1
fi
echo "expect-fail.sh: failed as expected (exit status $rc) with '$msg'"
exit 0
