#!/bin/sh
# Runs PROGRAM [ARGS...] as one MPI rank; the odd ranks of the job have no
# CUDA driver (UCX_GDRPIPE_CUDA_LIB points nowhere) and their "cuda" buffers
# are host memory (GDRPIPE_TEST_DEVICE_AS_HOST, bench/common/membuf.h): ranks
# with and without a GPU in one job.
rank=${OMPI_COMM_WORLD_RANK:-0}
if [ $((rank % 2)) -eq 1 ]; then
    UCX_GDRPIPE_CUDA_LIB=/nonexistent/libcuda.so.1
    GDRPIPE_TEST_DEVICE_AS_HOST=1
    export UCX_GDRPIPE_CUDA_LIB GDRPIPE_TEST_DEVICE_AS_HOST
fi
exec "$@"
