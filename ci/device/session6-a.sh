#!/bin/bash
# session6-a.sh -- on the GPU machine (2 x H200), repository root, .device/
# carried: the proof sweeps of the final crossover code (thin-window rule,
# kSwitchGain) with the three modes timed side by side, then the correctness
# checks that changed since the last GPU run (mpi_verify with 4 ranks on 2
# GPUs, the UCP verifier whose barriers now progress the workers). Logs in $OUT.
set -u
. "$(dirname "$0")/common.sh"
nvidia-smi -L
export GP_SWEEP_CPUS=2,3
TAIL=45 step sweep-host-gpu-put 110 env UCX_RNDV_SCHEME=put_zcopy bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-host-gpu" "$B"
TAIL=45 step sweep-gpu-host 110 bench/sweep_paths.sh --mem cuda,host --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-host" "$B"
TAIL=22 step sweep-gpu-gpu 150 bench/sweep_paths.sh --iters 20 --reps 5 --calib-dir "$OUT/calib-gpu-gpu" "$B"
unset GP_SWEEP_CPUS
export RUN_MPI_PRELOAD=$P UCX_TLS=gdrpipe,self
TAIL=8 step mpi-cuda-4ranks 80 env RUN_MPI_NP=4 UCX_GDRPIPE_CALIBRATE=force UCX_GDRPIPE_CALIB_DIR="$OUT/calib-4ranks" test/integration/run-mpi.sh $M -d cuda --max 16M --realloc
unset RUN_MPI_PRELOAD UCX_TLS
PRE="env LD_PRELOAD=$P UCX_TLS=gdrpipe,self"
TAIL=6 step ucp-cuda-v1 60 $PRE $V -d cuda --max 16M
TAIL=6 step ucp-cuda-v2 60 $PRE UCX_PROTO_ENABLE=y $V -d cuda --max 16M
echo "=== failed steps: $fails"
