// extern "C" face of device reductions across the processes of one host
// (include/gdrpipe/capi.h, "device reductions"): export and import of
// device buffers through the registry and the import cache the data paths
// use, and the reduction kernel (cuda/reduce.hpp).
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy.hpp"
#include "gdrpipe/cuda/copy_kernel.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/cuda/reduce.hpp"
#include "gdrpipe/pipeline/import_cache.hpp"
#include "gdrpipe/pipeline/registry.hpp"
#include "gdrpipe/self_pid.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cu = gdrpipe::cuda;
namespace pl = gdrpipe::pipeline;

namespace {
using gdrpipe::capi::set_err;

// start times of the peers named so far, each checked against the kernel's
// once: a process reports its own, and a reused pid must not find another
// process's mappings in the import cache
bool start_time_ok(pid_t pid, uint64_t start) {
    static std::mutex mu;
    static std::unordered_map<pid_t, uint64_t> seen;
    std::lock_guard<std::mutex> g(mu);
    auto it = seen.find(pid);
    if (it != seen.end() && it->second == start) return true;
    if (start == 0 || gdrpipe::wire::process_start_time(pid) != start) return false;
    seen[pid] = start;
    return true;
}
} // namespace

int gp_dev_export(const void *ptr, size_t len, gp_rkey_t *rkey, char *err, size_t errlen) {
    if (ptr == nullptr || len == 0 || rkey == nullptr) {
        set_err(err, errlen, "invalid argument");
        return -EINVAL;
    }
    if (!cu::driver().available()) {
        set_err(err, errlen, "CUDA is not available");
        return -ENOTSUP;
    }
    cu::MemInfo mi;
    if (cu::query(ptr, &mi) != CUDA_SUCCESS || mi.kind == cu::MemKind::host) {
        set_err(err, errlen, "not device memory");
        return -ENOTSUP;
    }
    std::string why;
    pl::Registration *reg = pl::register_memory(const_cast<void *>(ptr), len, 0, rkey, &why);
    if (reg == nullptr) {
        set_err(err, errlen, why);
        return -EINVAL;
    }
    // the export cache keeps the handle for later calls; the registration
    // itself (what staged requests may reach) is not needed
    pl::deregister(reg);
    if (rkey->kind != GP_RKEY_CUDA_IPC && rkey->kind != GP_RKEY_CUDA_VMM) {
        set_err(err, errlen, "device memory other processes cannot map");
        return -ENOTSUP;
    }
    return 0;
}

int gp_dev_import(const gp_rkey_t *rkey, uint64_t start_time, uint64_t addr, size_t len,
                  int device, void **local, void **hold, char *err, size_t errlen) {
    if (rkey == nullptr || local == nullptr || hold == nullptr) {
        set_err(err, errlen, "invalid argument");
        return -EINVAL;
    }
    *hold = nullptr;
    if (const char *why = gp_rkey_check(rkey)) {
        set_err(err, errlen, std::string("remote key rejected: ") + why);
        return -EINVAL;
    }
    if (addr < rkey->base || addr + len > rkey->base + rkey->length || addr + len < addr) {
        set_err(err, errlen, "range outside the remote key");
        return -EINVAL;
    }
    if (rkey->pid == gdrpipe::self_pid()) {
        *local = reinterpret_cast<void *>(addr);
        return 0;
    }
    if (rkey->kind != GP_RKEY_CUDA_IPC && rkey->kind != GP_RKEY_CUDA_VMM) {
        set_err(err, errlen, "remote key of memory other processes cannot map");
        return -ENOTSUP;
    }
    if (!start_time_ok(rkey->pid, start_time)) {
        set_err(err, errlen, "the peer process is not the one that exported the buffer");
        return -ESRCH;
    }
    auto res = pl::import_buffer(pl::peer_space(rkey->pid, start_time), *rkey, device);
    if (!res) {
        set_err(err, errlen, res.error().message);
        return -EIO;
    }
    const auto *imp = res.value().payload_as<pl::Import>();
    const uint64_t off = addr - rkey->base;
    if (off > imp->size || len > imp->size - off) {
        set_err(err, errlen, "range outside the mapped allocation");
        return -EINVAL;
    }
    *local = reinterpret_cast<void *>(imp->ptr + off);
    *hold = new gdrpipe::cache::RegionRef(std::move(res.value()));
    return 0;
}

void gp_dev_release(void *hold) { delete static_cast<gdrpipe::cache::RegionRef *>(hold); }

uint64_t gp_self_start_time(void) {
    // read once per process (a forked child has its own pid, and reads
    // again): the component asks for it at every device reduction
    static std::atomic<uint64_t> cached{0};
    static std::atomic<pid_t> cached_pid{0};
    const pid_t me = gdrpipe::self_pid();
    if (cached_pid.load(std::memory_order_acquire) != me) {
        cached.store(gdrpipe::wire::process_start_time(me), std::memory_order_relaxed);
        cached_pid.store(me, std::memory_order_release);
    }
    return cached.load(std::memory_order_relaxed);
}

int gp_cuda_reduce(int device, const struct gp_reduce_args *a, char *err, size_t errlen) {
    if (a == nullptr) return -EINVAL;
    cu::Status st = cu::reduce(device, *a);
    if (st.ok()) return 0;
    set_err(err, errlen, st.message);
    return st.code == CUDA_ERROR_NOT_SUPPORTED ? -ENOTSUP : -EIO;
}

int gp_cuda_sync_device(int device) {
    if (!cu::driver().available()) return -ENOTSUP;
    cu::ScopedContext scope(device);
    if (!scope.ok()) return -EIO;
    return cu::driver().api().cuStreamSynchronize(nullptr) == CUDA_SUCCESS ? 0 : -EIO;
}

int gp_cuda_copy_many(int device, const struct gp_copy_desc *d, size_t n, char *err,
                      size_t errlen) {
    if (d == nullptr && n > 0) return -EINVAL;
    if (!cu::driver().available()) {
        set_err(err, errlen, "no CUDA driver");
        return -ENOTSUP;
    }
    bool one_by_one = !cu::copy_kernel_built();
    for (size_t i = 0; i < n;) {
        const size_t k = std::min<size_t>(n - i, GP_COPY_BATCH_MAX);
        cu::Status st;
        if (!one_by_one) {
            cu::CopyToken tok;
            st = cu::copy_batch(device, cu::kReduceSlot, d + i, k, &tok);
            if (st.ok()) st = cu::wait(tok);
            if (!st.ok() && st.code == CUDA_ERROR_NOT_SUPPORTED) {
                // a device that refuses the kernel (nothing ran): the
                // driver's copies instead, for the rest of this call
                one_by_one = true;
                st = {};
            }
        }
        if (one_by_one) {
            cu::CopyOptions opt;
            opt.device = device;
            opt.slot = cu::kReduceSlot;
            for (size_t j = i; j < i + k && st.ok(); ++j) {
                st = cu::copy(reinterpret_cast<void *>(d[j].dst),
                              reinterpret_cast<const void *>(d[j].src), d[j].len, opt);
            }
        }
        if (!st.ok()) {
            set_err(err, errlen, st.message);
            return -EIO;
        }
        i += k;
    }
    return 0;
}
