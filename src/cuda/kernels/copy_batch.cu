// gp_copy_batch -- copies a batch of (dst, src, len) byte ranges in one kernel
// launch: the direct path's copies of one progress round, queued together.
// One launch costs what one copy-engine copy costs to queue, so a window of
// messages pays it once instead of once per message.
//
// Grid: blockIdx.y is the descriptor, blocks along x stride over its bytes.
// Built to a fatbin by meson (nvcc) and embedded in the plugin (copy_kernel.cc);
// include/gdrpipe/cuda/copy_kernel_abi.h is the parameter layout both share.
#include "gdrpipe/cuda/copy_kernel_abi.h"

namespace {

template <typename T>
__device__ void copy_words(char *dst, const char *src, unsigned long long len) {
    T *d = reinterpret_cast<T *>(dst);
    const T *s = reinterpret_cast<const T *>(src);
    const unsigned long long n = len / sizeof(T);
    const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
    unsigned long long i = 1ull * blockIdx.x * blockDim.x + threadIdx.x;
    // four loads in flight per thread, then their stores
    for (; i + 3 * stride < n; i += 4 * stride) {
        T a = s[i], b = s[i + stride], c = s[i + 2 * stride], e = s[i + 3 * stride];
        d[i] = a;
        d[i + stride] = b;
        d[i + 2 * stride] = c;
        d[i + 3 * stride] = e;
    }
    for (; i < n; i += stride) d[i] = s[i];
}

__device__ void copy_bytes(char *dst, const char *src, unsigned long long len) {
    const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
    for (unsigned long long i = 1ull * blockIdx.x * blockDim.x + threadIdx.x; i < len; i += stride)
        dst[i] = src[i];
}

} // namespace

extern "C" __global__ void gp_copy_batch(gp_copy_batch_t b) {
    if (blockIdx.y >= b.count) return;
    const gp_copy_desc_t d = b.desc[blockIdx.y];
    char *dst = reinterpret_cast<char *>(d.dst);
    const char *src = reinterpret_cast<const char *>(d.src);
    unsigned long long len = d.len;
    // same alignment on both sides: bytes up to the 16-byte boundary, then
    // 16-byte words, then the tail; otherwise the widest common word
    const unsigned long long mis = (d.dst ^ d.src);
    const unsigned align = (mis & 15) == 0 ? 16 : (mis & 7) == 0 ? 8 : (mis & 3) == 0 ? 4 : 1;
    unsigned long long head = (align - (d.dst & (align - 1))) & (align - 1);
    if (head > len) head = len;
    if (head != 0) {
        if (blockIdx.x == 0 && threadIdx.x < head) dst[threadIdx.x] = src[threadIdx.x];
        dst += head;
        src += head;
        len -= head;
    }
    const unsigned long long body = len / align * align;
    switch (align) {
    case 16: copy_words<uint4>(dst, src, body); break;
    case 8: copy_words<unsigned long long>(dst, src, body); break;
    case 4: copy_words<unsigned>(dst, src, body); break;
    default: copy_bytes(dst, src, body); break;
    }
    const unsigned long long tail = len - body;
    if (blockIdx.x == 0 && threadIdx.x < tail) dst[body + threadIdx.x] = src[body + threadIdx.x];
}
