#!/bin/bash
# ucx_tools.sh PLUGIN -- the plugin as UCX's own tools see it: listed by
# ucx_info, configuration visible and validated, selected by UCX_TLS.
set -u
plugin=$1
cudasim=${2:-}   # the CUDA driver simulator (libcuda.so.1), when built
fail=0
check() {   # check "what" command...
    local what=$1; shift
    if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}
export UCX_WARN_UNUSED_ENV_VARS=n
info_d=$(LD_PRELOAD=$plugin ucx_info -d 2>&1)
check "ucx_info -d lists component gdrpipe" grep -q "Component: gdrpipe" <<< "$info_d"
check "ucx_info -d lists transport gdrpipe on device memory" \
    grep -qzE "Transport: gdrpipe[[:space:]]+#[[:space:]]+Device: memory" <<< "$info_d"
check "without the plugin there is no gdrpipe" \
    bash -c "! ucx_info -d 2>&1 | grep -q gdrpipe"

# the RDMA transport: no RDMA device here -> no resource, nothing logged
check "no RDMA device: no gp_rdma resource and no RDMA message" \
    bash -c "! grep -qiE 'gp_rdma|gdrpipe_rdma|rdma:' <<< \"\$0\"" "$info_d"
info_fake=$(LD_PRELOAD=$plugin GDRPIPE_TEST_RDMA_FAKE=y ucx_info -d 2>&1)
check "GDRPIPE_TEST_RDMA_FAKE=y (test only) lists gp_rdma on fake0:1" \
    grep -qzE "Transport: gp_rdma[[:space:]]+#[[:space:]]+Device: fake0:1" <<< "$info_fake"
info_bad=$(LD_PRELOAD=$plugin GDRPIPE_TEST_RDMA_FAKE=y GDRPIPE_TEST_RDMA_FAKE_BW=fast \
    ucx_info -d 2>&1)
check "an invalid GDRPIPE_TEST_RDMA_FAKE_BW is refused by name, and no fake device" \
    bash -c 'grep -q "invalid GDRPIPE_TEST_RDMA_FAKE_BW=fast" <<< "$1" && ! grep -q fake0:1 <<< "$1"' \
    _ "$info_bad"
# a build without the fake (release, unless -Drdma_fake=enabled) refuses it
# with one error and lists no fake device
if [ -n "${NOFAKE_PLUGIN:-}" ]; then
    info_nofake=$(LD_PRELOAD=$NOFAKE_PLUGIN GDRPIPE_TEST_RDMA_FAKE=y ucx_info -d 2>&1)
    check "a build without the fake fabric ignores GDRPIPE_TEST_RDMA_FAKE=y" \
        bash -c "! grep -q 'fake0:1' <<< \"\$0\"" "$info_nofake"
    check "... with one error line naming the build option" \
        bash -c '[ "$(grep -c "left out of this build (meson -Drdma_fake=enabled)" <<< "$1")" = 1 ]' \
        _ "$info_nofake"
    check "... and still lists gdrpipe" grep -q "Transport: gdrpipe" <<< "$info_nofake"
fi
# the GPUDirect RDMA mode, probed once, is logged at md open (ucx_info -d has
# no free-text field for an MD or resource; UCX_LOG_LEVEL=info shows it)
mode_line() { grep -E "gdrpipe_rdma: fake0:1: GPUDirect RDMA mode: $1\$" <<< "$2" > /dev/null; }
info_mode=$(LD_PRELOAD=$plugin GDRPIPE_TEST_RDMA_FAKE=y UCX_LOG_LEVEL=info \
    UCX_GDRPIPE_CUDA_LIB=/nonexistent/libcuda.so.1 ucx_info -d 2>&1)
check "ucx_info -d (log level info) shows the GPUDirect mode: none without CUDA" \
    mode_line none "$info_mode"
check "the mode is probed once per process" \
    bash -c '[ "$(grep -c "GPUDirect RDMA through\|no GPUDirect RDMA" <<< "$1")" = 1 ]' _ "$info_mode"
if [ -n "$cudasim" ] && [ -r "$cudasim" ]; then
    info_mode=$(LD_PRELOAD=$plugin GDRPIPE_TEST_RDMA_FAKE=y UCX_LOG_LEVEL=info \
        UCX_GDRPIPE_CUDA_LIB=$cudasim ucx_info -d 2>&1)
    check "ucx_info -d shows the GPUDirect mode: dma-buf with a dma-buf GPU" \
        mode_line dma-buf "$info_mode"
    info_mode=$(LD_PRELOAD=$plugin GDRPIPE_TEST_RDMA_FAKE=y GDRPIPE_TEST_RDMA_FAKE_DMABUF=n \
        UCX_LOG_LEVEL=info UCX_GDRPIPE_CUDA_LIB=$cudasim ucx_info -d 2>&1)
    check "ucx_info -d shows the GPUDirect mode: none when the NIC refuses dma-bufs" \
        mode_line none "$info_mode"
else
    echo "skip - GPUDirect mode with the CUDA simulator (not built)"
fi

info_c=$(LD_PRELOAD=$plugin ucx_info -c 2>&1)
for v in PATH THRESH CHUNK_SIZE SLOTS SEG_SIZE; do
    check "ucx_info -c shows UCX_GDRPIPE_RDMA_$v" grep -q "^UCX_GDRPIPE_RDMA_$v=" <<< "$info_c"
done
# the fake fabric's settings are the test suite's own, not UCX's configuration
check "ucx_info -c shows no test-only setting (no UCX_GDRPIPE_RDMA_FAKE*)" \
    bash -c '! grep -q "^UCX_GDRPIPE_RDMA_FAKE" <<< "$1"' _ "$info_c"
# RDMA_THRESH=auto (default): per (GPU, port) calibration, its own settings
for v in THRESH=auto CALIBRATE=auto CALIB_DIR= CALIB_BUDGET= CALIB_WAIT= CALIB_MAX_SIZE=; do
    check "ucx_info -c shows UCX_GDRPIPE_RDMA_$v..." grep -q "^UCX_GDRPIPE_RDMA_$v" <<< "$info_c"
done
set_r=$(LD_PRELOAD=$plugin UCX_GDRPIPE_RDMA_THRESH=inf UCX_GDRPIPE_RDMA_CALIBRATE=off ucx_info -c 2>&1)
check "UCX_GDRPIPE_RDMA_THRESH=inf and RDMA_CALIBRATE=off are accepted" \
    bash -c 'grep -q "^UCX_GDRPIPE_RDMA_THRESH=inf" <<< "$1" && grep -q "^UCX_GDRPIPE_RDMA_CALIBRATE=off" <<< "$1"' _ "$set_r"
for v in SEG_SIZE FIFO_SIZE BW LAT COPY_H2D_BW COPY_D2H_BW COPY_LAT CUDA_LIB; do
    check "ucx_info -c shows UCX_GDRPIPE_$v" grep -q "^UCX_GDRPIPE_$v=" <<< "$info_c"
done
for v in THRESH=auto CALIBRATE=auto CHUNK_SIZE=auto PIPELINE_DEPTH=auto CALIB_BUDGET= CALIB_WAIT= \
         CALIB_MAX_SIZE= CALIB_DIR=; do
    check "ucx_info -c shows UCX_GDRPIPE_$v..." grep -q "^UCX_GDRPIPE_$v" <<< "$info_c"
done
info_cf=$(LD_PRELOAD=$plugin ucx_info -cf 2>&1)
check "ucx_info -cf documents FIFO_SIZE" grep -q "receive FIFO" <<< "$info_cf"

# ucx_info -e: a worker's endpoint to itself. Where the wire's md reaches
# device memory (UCX 1.16+, GDRPIPE_UCX_ABI other than v1_13) the wire does
# not reach its own interface (plugin/shm_iface.c): 'self' serves it
lanes=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self ucx_info -e -u t 2>&1)
if [ "${GDRPIPE_UCX_ABI:-v1_13}" = v1_13 ]; then
    check "UCX_TLS=gdrpipe,self gives gdrpipe lanes" grep -q "gdrpipe/memory" <<< "$lanes"
else
    check "UCX_TLS=gdrpipe,self: a worker reaches itself by self, not the wire" \
        bash -c 'grep -q "self/memory" <<< "$1" && ! grep -q "gdrpipe/memory" <<< "$1"' _ "$lanes"
fi

bad=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_GDRPIPE_FIFO_SIZE=abc ucx_info -e -u t 2>&1)
check "invalid UCX_GDRPIPE_FIFO_SIZE is rejected by name" grep -q "Invalid value for FIFO_SIZE" <<< "$bad"
bad=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_GDRPIPE_SEG_SIZE=16 ucx_info -e -u t 2>&1)
check "out-of-range UCX_GDRPIPE_SEG_SIZE is rejected by name" grep -q "UCX_GDRPIPE_SEG_SIZE=16 is out of range" <<< "$bad"
bad=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_GDRPIPE_BW=fast ucx_info -e -u t 2>&1)
check "invalid UCX_GDRPIPE_BW is rejected by name" grep -q "Invalid value for BW" <<< "$bad"
bad=$(LD_PRELOAD=$plugin UCX_TLS=gdrpipe,self UCX_GDRPIPE_CALIBRATE=sometimes ucx_info -e -u t 2>&1)
check "invalid UCX_GDRPIPE_CALIBRATE is rejected by name" grep -q "Invalid value for CALIBRATE" <<< "$bad"
set_c=$(LD_PRELOAD=$plugin UCX_GDRPIPE_THRESH=inf UCX_GDRPIPE_PIPELINE_DEPTH=8 ucx_info -c 2>&1)
check "UCX_GDRPIPE_THRESH=inf and PIPELINE_DEPTH=8 are accepted" \
    bash -c 'grep -q "^UCX_GDRPIPE_THRESH=inf" <<< "$1" && grep -q "^UCX_GDRPIPE_PIPELINE_DEPTH=8" <<< "$1"' _ "$set_c"
exit $fail
