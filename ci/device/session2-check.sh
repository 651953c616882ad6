#!/bin/bash
# session2-check.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: every GPU correctness check of the current tree. Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
step info 30 "$B/tools/gdrpipe-info"
step static-cudart-frees 60 .device/gpu-hooks/static_cudart_frees
# the CUDA side of GPUDirect RDMA (dma-buf export, write flush) on the real driver
step gpudirect-real-driver 60 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/cuda/test_cuda_sim" "[gpudirect]"
# direct path for exportable stream-ordered pool memory; the default pool staged
step pool-unit 120 env UCX_GDRPIPE_CUDA_LIB=$REAL "$B/test/unit/pipeline/test_pipeline" "[pool]"
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self UCX_GDRPIPE_PATH=direct"
step pool-direct 120 $PRE bash test/integration/expect-path.sh direct $B/test/integration/ucp_verify -d cuda --cuda-alloc pool --max 64M --realloc
step pool-default-fallback 120 $PRE bash test/integration/expect-path.sh fallback $B/test/integration/ucp_verify -d cuda --cuda-alloc async --max 16M
# ucp_verify 0 B .. 1 GiB, each path, protocols v1 and v2
step ucp-sweep-direct 250 bash test/integration/gpu-sweep.sh -b "$B" -o "$OUT/sweep" -P direct -V "n y" -t 120
step ucp-sweep-staged 130 bash test/integration/gpu-sweep.sh -b "$B" -o "$OUT/sweep" -P staged -V "n" -t 120
cat "$OUT/sweep/ucp-sweep.txt" 2>/dev/null
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
step mpi-2gpu-1g 240 test/integration/run-mpi.sh $M -d cuda --max 1G --realloc
step mpi-2gpu-1g-put 240 env UCX_RNDV_SCHEME=put_zcopy test/integration/run-mpi.sh $M -d cuda --max 1G --realloc
step mpi-1gpu 200 test/integration/run-mpi.sh $M -d cuda -G 0 --max 64M --realloc
step mpi-staged-put 200 env UCX_GDRPIPE_PATH=staged UCX_RNDV_SCHEME=put_zcopy test/integration/run-mpi.sh $M -d cuda --max 256M --realloc
step mpi-before 100 test/integration/run-mpi.sh $M -d cuda --alloc-before --max 16M
unset RUN_MPI_PRELOAD UCX_TLS
echo "=== failed steps: $fails"
