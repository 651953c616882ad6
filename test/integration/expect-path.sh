#!/bin/sh
# Runs a client with the gdrpipe counters logged (UCX_GDRPIPE_STATS=y at
# INFO) and checks the data paths its transfer engines used.
#   expect-path.sh direct   CMD...  some direct transfers, no fallback to staged
#   expect-path.sh fallback CMD...  some counted fallbacks (direct impossible)
# The client's own exit status comes first (data verification).
set -u
want=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
UCX_GDRPIPE_STATS=y UCX_LOG_LEVEL=info "$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || { echo "expect-path: client failed ($rc)"; exit $rc; }
# engine counter lines: "xfer: direct=N (B) staged=N (B) ... fallbacks=N ..."
lines=$(grep -o 'xfer: direct=[0-9]* .*fallbacks=[0-9]*' "$log")
[ -n "$lines" ] || { echo "expect-path: no counter lines (UCX_GDRPIPE_STATS)"; exit 1; }
direct=0
fallbacks=0
for n in $(printf '%s\n' "$lines" | sed 's/^xfer: direct=\([0-9]*\).*/\1/'); do
    direct=$((direct + n))
done
for n in $(printf '%s\n' "$lines" | sed 's/.*fallbacks=\([0-9]*\)$/\1/'); do
    fallbacks=$((fallbacks + n))
done
echo "expect-path: direct=$direct fallbacks=$fallbacks (want $want)"
case $want in
direct) [ "$direct" -gt 0 ] && [ "$fallbacks" -eq 0 ] ;;
fallback) [ "$fallbacks" -gt 0 ] ;;
*) echo "expect-path: unknown expectation $want"; exit 2 ;;
esac
