// What each reduction operation does to two elements: shared by the kernel
// (src/cuda/kernels/reduce.cu, compiled by nvcc) and the simulator's host
// version of it, so that both follow one definition (MPI's: logical
// operations give 0 or 1, bitwise ones are defined on integers only).
#pragma once

#include "gdrpipe/cuda/reduce_abi.h"

#include <type_traits>

#ifdef __CUDACC__
#define GP_RED_HD __host__ __device__ __forceinline__
#else
#define GP_RED_HD inline
#endif

namespace gdrpipe::cuda {

template <typename T>
GP_RED_HD T red_apply(unsigned op, T a, T b) {
    switch (op) {
    case GP_RED_SUM: return T(a + b);
    case GP_RED_PROD: return T(a * b);
    case GP_RED_MIN: return b < a ? b : a;
    case GP_RED_MAX: return a < b ? b : a;
    case GP_RED_LAND: return T((a != T(0)) && (b != T(0)));
    case GP_RED_LOR: return T((a != T(0)) || (b != T(0)));
    case GP_RED_LXOR: return T((a != T(0)) != (b != T(0)));
    default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case GP_RED_BAND: return T(a & b);
        case GP_RED_BOR: return T(a | b);
        case GP_RED_BXOR: return T(a ^ b);
        default: break;
        }
    }
    return a;
}

// Element i of the reduction (args.begin <= i < args.end): every source
// read, then every destination written.
template <typename T>
GP_RED_HD void red_element(const gp_reduce_args_t &a, unsigned long long i) {
    T acc = reinterpret_cast<const T *>(a.src[0])[i];
    for (unsigned s = 1; s < a.nsrc; ++s)
        acc = red_apply<T>(a.op, acc, reinterpret_cast<const T *>(a.src[s])[i]);
    for (unsigned d = 0; d < a.ndst; ++d) reinterpret_cast<T *>(a.dst[d])[i] = acc;
}

} // namespace gdrpipe::cuda
