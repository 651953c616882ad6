#!/bin/bash
# rndv_thresh.sh EXE PLUGIN: the rendezvous threshold UCP computes for a
# gdrpipe endpoint stays at the AM bcopy size (at most 16 KiB) whatever the
# processes per node and the CPU's copy bandwidth estimate (UCX_BCOPY_BW: 5008
# MB/s on AMD, 5800 MB/s on Intel). It was 47 KB with 2 ranks on Intel and
# 44 KB with 8 ranks, which sent 16 and 32 KiB device messages eagerly, at 3-6
# times the rendezvous time on the H200 pair (bench/RESULTS.md).
# With a third argument, the CUDA driver library to load (the simulator), the
# same again with CUDA on (the copy transport and its memory domain loaded):
# the threshold must not move. Protocol v1 (UCX_PROTO_ENABLE=n: the default
# of UCX 1.13, a choice from 1.16): the threshold is v1's, printed by
# ucp_ep_print_info; protocol v2 chooses per message size from estimates.
set -u
exe=$1 plugin=$2
cudalib=${3:-}
fail=0
for cuda in off ${cudalib:+on}; do
    lib=/nonexistent/libcuda.so.1
    [ "$cuda" = on ] && lib=$cudalib
    for bw in 5008MBs 5800MBs; do
        for ppn in 1 2 8 64; do
            if out=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_BCOPY_BW=$bw UCX_PROTO_ENABLE=n \
                     UCX_GDRPIPE_CUDA_LIB=$lib GDRPIPE_SIM_DEVICES=2 \
                     UCX_WARN_UNUSED_ENV_VARS=n timeout 60 "$exe" "$ppn" 16384 2>/dev/null); then
                echo "ok: CUDA $cuda, BCOPY_BW $bw, $out"
            else
                echo "FAIL: CUDA $cuda, BCOPY_BW $bw, ${out:-ppn $ppn: error}"
                fail=1
            fi
        done
    done
done
exit $fail
