#!/bin/sh
# Runs a client with the gdrpipe counters logged (UCX_GDRPIPE_STATS=y at
# INFO) and checks the data paths its transfer engines used.
#   expect-path.sh direct   CMD...  some direct transfers, no fallback to staged
#   expect-path.sh fallback CMD...  some counted fallbacks (direct impossible)
#   expect-path.sh device-rndv CMD...  some device tag sends given the device
#                                   rendezvous threshold (plugin/ucp_send.c)
#   expect-path.sh no-device-rndv CMD...  none (host buffers only)
#   expect-path.sh device-rndv-burst CMD...  some of them with the threshold 1,
#                                   in a window of sends (DEVICE_RNDV_BURST)
#   expect-path.sh no-device-rndv-burst CMD...  none of them
#   expect-path.sh host-eager CMD...  some device tag sends went eagerly from
#                                   a host copy (DEVICE_HOST_EAGER: their
#                                   receivers took device data into host memory)
#   expect-path.sh no-host-eager CMD...  none did
#   expect-path.sh known-device CMD...  some short copies by the copy
#                                   transport found their device buffer known
#                                   from earlier send or receive calls
#   expect-path.sh no-known-device CMD...  none did
#   expect-path.sh moves-handed-on CMD...  some data-moving collectives gave
#                                   their device buffers to Open MPI's own
#                                   algorithms (coll/gdrpipe's device_moves)
#   expect-path.sh no-moves-handed-on CMD...  none did (all staged)
#   expect-path.sh gpu-reduce CMD...  some MPI reductions of device buffers
#                                   done on the GPU (coll/gdrpipe's
#                                   device_reduce), and how many were staged
#   expect-path.sh gpu-moves CMD...  some data-moving collectives of device
#                                   buffers moved on the GPU by one process
#                                   per GPU (coll/gdrpipe's device_moves_gpu)
#   expect-path.sh no-gpu-moves CMD...  none
#   expect-path.sh no-gpu-reduce CMD...  none on the GPU and none agreed on
#                                   (host buffers only: no allgather per call)
#   expect-path.sh staged-served CMD...  every engine both staged transfers and
#                                   served a peer's, none fell back (ranks
#                                   with and without CUDA: staging is the
#                                   only path between them)
#   expect-path.sh staged-paired CMD...  some staged transfers, each served by
#                                   the peer (staged = served over all
#                                   engines), none fell back: where the
#                                   protocol lets one side do every transfer
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
case $want in
moves-handed-on | no-moves-handed-on)
    # one line per process that handed any on: "coll gdrpipe: device
    # buffers handed on in N data-moving collectives"
    n=0
    for c in $(grep -o 'device buffers handed on in [0-9]*' "$log" | sed 's/.* //'); do
        n=$((n + c))
    done
    echo "expect-path: data-moving collectives with device buffers handed on: $n (want $want)"
    case $want in
    no-*) [ "$n" -eq 0 ] ;;
    *) [ "$n" -gt 0 ] ;;
    esac
    exit
    ;;
device-rndv | no-device-rndv | device-rndv-burst | no-device-rndv-burst | host-eager | no-host-eager | \
known-device | no-known-device)
    # one line per interface: "device tag sends by rendezvous
    # (DEVICE_RNDV_THRESH): N, of them in a window of sends (DEVICE_RNDV_BURST): M;
    # device tag sends from a host copy (DEVICE_HOST_EAGER): K"
    case $want in
    *-burst) pattern='of them in a window of sends (DEVICE_RNDV_BURST): [0-9]*'
             what="device tag sends given the window's threshold" ;;
    *host-eager) pattern='device tag sends from a host copy (DEVICE_HOST_EAGER): [0-9]*'
                 what="device tag sends from a host copy" ;;
    *known-device) pattern='short copies of device buffers known from earlier calls: [0-9]*'
                   what="short copies of device buffers known beforehand" ;;
    *) pattern='device tag sends by rendezvous (DEVICE_RNDV_THRESH): [0-9]*'
       what="device tag sends by rendezvous" ;;
    esac
    lines=$(grep -o "$pattern" "$log")
    [ -n "$lines" ] || { echo "expect-path: no counter lines for: $what"; exit 1; }
    n=0
    for c in $(printf '%s\n' "$lines" | sed 's/.*: //'); do n=$((n + c)); done
    echo "expect-path: $what=$n (want $want)"
    case $want in
    no-*) [ "$n" -eq 0 ] ;;
    *) [ "$n" -gt 0 ] ;;
    esac
    exit
    ;;
esac
if [ "$want" = gpu-moves ] || [ "$want" = no-gpu-moves ]; then
    # "coll gdrpipe: device data moves on the GPU: N, otherwise: M", per
    # communicator that counted any
    n=0
    for c in $(grep -o 'device data moves on the GPU: [0-9]*' "$log" | sed 's/.* //'); do
        n=$((n + c))
    done
    echo "expect-path: data-moving collectives moved on the GPU: $n (want $want)"
    if [ "$want" = no-gpu-moves ]; then
        [ "$n" -eq 0 ]
    else
        [ "$n" -gt 0 ]
    fi
    exit
fi
if [ "$want" = gpu-reduce ] || [ "$want" = no-gpu-reduce ]; then
    # "coll gdrpipe: device reductions on the GPU: N, staged: M", per
    # communicator that agreed on any (none: no line)
    lines=$(grep -o 'device reductions on the GPU: [0-9]*, staged: [0-9]*' "$log")
    if [ "$want" = no-gpu-reduce ]; then
        echo "expect-path: device reduction counter lines: $(printf '%s' "$lines" | grep -c .) (want none)"
        [ -z "$lines" ]
        exit
    fi
    [ -n "$lines" ] || { echo "expect-path: no device reduction counter lines"; exit 1; }
    gpu=0
    staged=0
    for c in $(printf '%s\n' "$lines" | sed 's/.*GPU: \([0-9]*\),.*/\1/'); do gpu=$((gpu + c)); done
    for c in $(printf '%s\n' "$lines" | sed 's/.*staged: //'); do staged=$((staged + c)); done
    echo "expect-path: device reductions on the GPU=$gpu staged=$staged (want $want)"
    [ "$gpu" -gt 0 ]
    exit
fi
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
if [ "$want" = staged-paired ]; then
    staged=0 served=0
    for c in $(printf '%s\n' "$lines" | grep -o ' staged=[0-9]*' | sed 's/.*=//'); do staged=$((staged + c)); done
    for c in $(printf '%s\n' "$lines" | grep -o ' served=[0-9]*' | sed 's/.*=//'); do served=$((served + c)); done
    echo "expect-path: staged=$staged served=$served fallbacks=$fallbacks (want $want)"
    [ "$staged" -gt 0 ] && [ "$staged" -eq "$served" ] && [ "$fallbacks" -eq 0 ]
    exit
fi
if [ "$want" = staged-served ]; then
    bad=$(printf '%s\n' "$lines" | grep -cE ' staged=0 | served=0 |fallbacks=[1-9]')
    echo "expect-path: $(printf '%s\n' "$lines" | grep -c .) engines, $bad without both" \
        "staged and served transfers or with fallbacks (want $want)"
    [ "$bad" -eq 0 ]
    exit
fi
echo "expect-path: direct=$direct fallbacks=$fallbacks (want $want)"
case $want in
direct) [ "$direct" -gt 0 ] && [ "$fallbacks" -eq 0 ] ;;
fallback) [ "$fallbacks" -gt 0 ] ;;
*) echo "expect-path: unknown expectation $want"; exit 2 ;;
esac
