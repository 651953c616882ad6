// gp_reduce -- combines the same element range of several buffers (each in
// any process's memory this context has mapped: its own, a peer process's
// imported with CUDA IPC, a peer GPU's) and writes the result to several
// buffers: one launch carries out an MPI reduction over a node's ranks.
// Grid-stride over the elements; include/gdrpipe/cuda/reduce_abi.h is the
// parameter layout, reduce_ops.hpp what each operation does.
#include "gdrpipe/cuda/reduce_ops.hpp"

namespace {

template <typename T>
__device__ void reduce_range(const gp_reduce_args_t &a) {
    const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
    for (unsigned long long i = a.begin + 1ull * blockIdx.x * blockDim.x + threadIdx.x; i < a.end;
         i += stride)
        gdrpipe::cuda::red_element<T>(a, i);
}

} // namespace

extern "C" __global__ void gp_reduce(gp_reduce_args_t a) {
    switch (a.type) {
    case GP_RED_I8: reduce_range<signed char>(a); break;
    case GP_RED_U8: reduce_range<unsigned char>(a); break;
    case GP_RED_I16: reduce_range<short>(a); break;
    case GP_RED_U16: reduce_range<unsigned short>(a); break;
    case GP_RED_I32: reduce_range<int>(a); break;
    case GP_RED_U32: reduce_range<unsigned int>(a); break;
    case GP_RED_I64: reduce_range<long long>(a); break;
    case GP_RED_U64: reduce_range<unsigned long long>(a); break;
    case GP_RED_F32: reduce_range<float>(a); break;
    case GP_RED_F64: reduce_range<double>(a); break;
    default: break;
    }
}
