// Device table, primary contexts, stream slots and event pools.
#include "gdrpipe/cuda/context.hpp"

#include "gdrpipe/cuda/copy_kernel.hpp"
#include "gdrpipe/cuda/reduce.hpp"
#include "gdrpipe/log.hpp"

#include <unordered_set>

namespace gdrpipe::cuda {

struct DeviceManager::Device {
    std::mutex mutex;
    DeviceProps props;
    std::atomic<CUcontext> ctx{nullptr};
    CUstream streams[kStreamSlots] = {};
    std::vector<CUevent> free_events;
    std::unordered_set<CUevent> outstanding;
    std::vector<signed char> can_peer;  // per peer: -1 unknown, 0 no, 1 yes
    std::vector<bool> peer_enabled;     // per peer
    CUmodule modules[kKernels] = {};    // kernel()
    CUfunction fns[kKernels] = {};
    bool failed[kKernels] = {};
};

namespace {
struct KernelImage {
    const unsigned char *image;
    const std::size_t *len;
    const char *name;
    const char *what;
};
const KernelImage kImages[DeviceManager::kKernels] = {
    {gp_copy_batch_fatbin, &gp_copy_batch_fatbin_len, GP_COPY_KERNEL_NAME,
     "the batched copy kernel"},
    {gp_reduce_fatbin, &gp_reduce_fatbin_len, GP_REDUCE_KERNEL_NAME, "the reduction kernel"},
};
} // namespace

DeviceManager::DeviceManager(Driver &drv) : drv_(drv) {}

DeviceManager::~DeviceManager() { shutdown(); }

DeviceManager::Device *DeviceManager::dev(int ordinal) {
    if (!table_ready_.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(table_mutex_);
        if (!table_ready_.load(std::memory_order_relaxed)) {
            int n = 0;
            const Api &api = drv_.api();
            if (drv_.available() && api.cuDeviceGetCount(&n) != CUDA_SUCCESS) n = 0;
            for (int i = 0; i < n; ++i) {
                auto d = std::make_unique<Device>();
                DeviceProps &p = d->props;
                p.ordinal = i;
                CUresult r = api.cuDeviceGet(&p.device, i);
                if (r != CUDA_SUCCESS) {
                    GP_WARN("cuDeviceGet(%d) failed: %s; using %d device(s)", i,
                            describe(r).c_str(), i);
                    break;
                }
                char buf[256] = {};
                if (api.cuDeviceGetName(buf, sizeof(buf) - 1, p.device) == CUDA_SUCCESS) {
                    p.name = buf;
                }
                if (api.cuDeviceGetUuid != nullptr) api.cuDeviceGetUuid(&p.uuid, p.device);
                char bus[64] = {};
                if (api.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, p.device) == CUDA_SUCCESS) {
                    p.pci_bus_id = bus;
                }
                api.cuDeviceGetAttribute(&p.cc_major,
                                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, p.device);
                api.cuDeviceGetAttribute(&p.cc_minor,
                                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, p.device);
                d->can_peer.assign(static_cast<size_t>(n), -1);
                d->peer_enabled.assign(static_cast<size_t>(n), false);
                devices_.push_back(std::move(d));
            }
            table_ready_.store(true, std::memory_order_release);
        }
    }
    if (ordinal < 0 || static_cast<size_t>(ordinal) >= devices_.size()) return nullptr;
    return devices_[static_cast<size_t>(ordinal)].get();
}

int DeviceManager::count() {
    dev(0);
    return static_cast<int>(devices_.size());
}

const DeviceProps *DeviceManager::props(int ordinal) {
    Device *d = dev(ordinal);
    return d != nullptr ? &d->props : nullptr;
}

CUresult DeviceManager::retain_locked(Device &d) {
    if (d.ctx.load(std::memory_order_relaxed) != nullptr) return CUDA_SUCCESS;
    CUcontext c = nullptr;
    CUresult r = drv_.api().cuDevicePrimaryCtxRetain(&c, d.props.device);
    if (r != CUDA_SUCCESS) {
        GP_ERROR("cuDevicePrimaryCtxRetain(device %d) failed: %s", d.props.ordinal,
                 describe(r).c_str());
        return r;
    }
    d.ctx.store(c, std::memory_order_release);
    return CUDA_SUCCESS;
}

CUresult DeviceManager::primary_context(int ordinal, CUcontext *out) {
    if (!drv_.available()) return CUDA_ERROR_NOT_INITIALIZED;
    Device *d = dev(ordinal);
    if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    CUcontext c = d->ctx.load(std::memory_order_acquire);
    if (c == nullptr) {
        std::lock_guard<std::mutex> lock(d->mutex);
        CUresult r = retain_locked(*d);
        if (r != CUDA_SUCCESS) return r;
        c = d->ctx.load(std::memory_order_relaxed);
    }
    *out = c;
    return CUDA_SUCCESS;
}

bool DeviceManager::can_access_peer(int dev_ordinal, int peer) {
    Device *d = dev(dev_ordinal);
    Device *p = dev(peer);
    if (d == nullptr || p == nullptr || d == p) return false;
    std::lock_guard<std::mutex> lock(d->mutex);
    signed char &cached = d->can_peer[static_cast<size_t>(peer)];
    if (cached < 0) {
        int v = 0;
        CUresult r = drv_.api().cuDeviceCanAccessPeer(&v, d->props.device, p->props.device);
        cached = (r == CUDA_SUCCESS && v != 0) ? 1 : 0;
    }
    return cached == 1;
}

CUresult DeviceManager::enable_peer_access(int dev_ordinal, int peer) {
    if (!drv_.available()) return CUDA_ERROR_NOT_INITIALIZED;
    Device *d = dev(dev_ordinal);
    if (d == nullptr || dev(peer) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    if (dev_ordinal == peer) return CUDA_SUCCESS;
    if (!can_access_peer(dev_ordinal, peer)) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    CUcontext peer_ctx = nullptr;
    CUresult r = primary_context(peer, &peer_ctx);
    if (r != CUDA_SUCCESS) return r;

    std::lock_guard<std::mutex> lock(d->mutex);
    if (d->peer_enabled[static_cast<size_t>(peer)]) return CUDA_SUCCESS;
    r = retain_locked(*d);
    if (r != CUDA_SUCCESS) return r;
    ScopedContext scope(drv_.api(), d->ctx.load(std::memory_order_relaxed));
    if (!scope.ok()) return scope.status();
    r = drv_.api().cuCtxEnablePeerAccess(peer_ctx, 0);
    if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) r = CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) d->peer_enabled[static_cast<size_t>(peer)] = true;
    return r;
}

CUresult DeviceManager::stream(int ordinal, unsigned slot, CUstream *out) {
    if (!drv_.available()) return CUDA_ERROR_NOT_INITIALIZED;
    if (slot >= kStreamSlots) return CUDA_ERROR_INVALID_VALUE;
    Device *d = dev(ordinal);
    if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(d->mutex);
    if (d->streams[slot] == nullptr) {
        CUresult r = retain_locked(*d);
        if (r != CUDA_SUCCESS) return r;
        ScopedContext scope(drv_.api(), d->ctx.load(std::memory_order_relaxed));
        if (!scope.ok()) return scope.status();
        r = drv_.api().cuStreamCreate(&d->streams[slot], slot == kOrderedSlot
                                                             ? CU_STREAM_DEFAULT
                                                             : CU_STREAM_NON_BLOCKING);
        if (r != CUDA_SUCCESS) {
            d->streams[slot] = nullptr;
            return r;
        }
    }
    *out = d->streams[slot];
    return CUDA_SUCCESS;
}

CUresult DeviceManager::kernel(int ordinal, Kernel k, CUfunction *out) {
    if (!drv_.available()) return CUDA_ERROR_NOT_INITIALIZED;
    Device *d = dev(ordinal);
    if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    const unsigned i = unsigned(k);
    if (i >= kKernels) return CUDA_ERROR_INVALID_VALUE;
    const KernelImage &img = kImages[i];
    std::lock_guard<std::mutex> lock(d->mutex);
    if (d->fns[i] != nullptr) {
        *out = d->fns[i];
        return CUDA_SUCCESS;
    }
    const Api &api = drv_.api();
    if (d->failed[i] || *img.len == 0 || api.cuModuleLoadData == nullptr ||
        api.cuLaunchKernel == nullptr)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = retain_locked(*d);
    if (r != CUDA_SUCCESS) return r;
    ScopedContext scope(api, d->ctx.load(std::memory_order_relaxed));
    if (!scope.ok()) return scope.status();
    r = api.cuModuleLoadData(&d->modules[i], img.image);
    if (r == CUDA_SUCCESS) r = api.cuModuleGetFunction(&d->fns[i], d->modules[i], img.name);
    if (r != CUDA_SUCCESS) {
        GP_DEBUG("device %d: %s did not load (%s)", ordinal, img.what, describe(r).c_str());
        if (d->modules[i] != nullptr) api.cuModuleUnload(d->modules[i]);
        d->modules[i] = nullptr;
        d->fns[i] = nullptr;
        d->failed[i] = true;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    *out = d->fns[i];
    return CUDA_SUCCESS;
}

CUresult DeviceManager::acquire_event(int ordinal, CUevent *out) {
    if (!drv_.available()) return CUDA_ERROR_NOT_INITIALIZED;
    Device *d = dev(ordinal);
    if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(d->mutex);
    CUevent ev = nullptr;
    if (!d->free_events.empty()) {
        ev = d->free_events.back();
        d->free_events.pop_back();
    } else {
        CUresult r = retain_locked(*d);
        if (r != CUDA_SUCCESS) return r;
        ScopedContext scope(drv_.api(), d->ctx.load(std::memory_order_relaxed));
        if (!scope.ok()) return scope.status();
        r = drv_.api().cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) return r;
    }
    d->outstanding.insert(ev);
    *out = ev;
    return CUDA_SUCCESS;
}

void DeviceManager::release_event(int ordinal, CUevent ev) noexcept {
    Device *d = dev(ordinal);
    if (d == nullptr || ev == nullptr) return;
    std::lock_guard<std::mutex> lock(d->mutex);
    if (d->outstanding.erase(ev) == 0) {
        GP_DEBUG("event %p of device %d is not outstanding (released after shutdown?)",
                 static_cast<void *>(ev), ordinal);
        return;
    }
    d->free_events.push_back(ev);
}

void DeviceManager::shutdown() noexcept {
    if (!table_ready_.load(std::memory_order_acquire)) return;
    const Api &api = drv_.api();
    for (auto &dp : devices_) {
        Device &d = *dp;
        std::lock_guard<std::mutex> lock(d.mutex);
        CUcontext ctx = d.ctx.load(std::memory_order_relaxed);
        if (ctx == nullptr) continue;
        {
            ScopedContext scope(api, ctx);
            for (CUstream &s : d.streams) {
                if (s != nullptr) api.cuStreamDestroy(s);
                s = nullptr;
            }
            for (CUevent ev : d.free_events) api.cuEventDestroy(ev);
            for (unsigned i = 0; i < kKernels; ++i) {
                if (d.modules[i] != nullptr) api.cuModuleUnload(d.modules[i]);
                d.modules[i] = nullptr;
                d.fns[i] = nullptr;
                d.failed[i] = false;
            }
            d.free_events.clear();
            if (!d.outstanding.empty()) {
                GP_WARN("device %d: %zu CUDA event(s) still in use at shutdown", d.props.ordinal,
                        d.outstanding.size());
                d.outstanding.clear();
            }
        }
        CUresult r = api.cuDevicePrimaryCtxRelease(d.props.device);
        if (r != CUDA_SUCCESS) {
            GP_WARN("cuDevicePrimaryCtxRelease(device %d) failed: %s", d.props.ordinal,
                    describe(r).c_str());
        }
        d.ctx.store(nullptr, std::memory_order_release);
        d.peer_enabled.assign(d.peer_enabled.size(), false);
    }
}

DeviceStats DeviceManager::stats() {
    DeviceStats s;
    if (!table_ready_.load(std::memory_order_acquire)) return s;
    for (auto &dp : devices_) {
        std::lock_guard<std::mutex> lock(dp->mutex);
        if (dp->ctx.load(std::memory_order_relaxed) != nullptr) ++s.contexts_retained;
        for (CUstream st : dp->streams) s.streams += st != nullptr ? 1 : 0;
        s.events_pooled += static_cast<int>(dp->free_events.size());
        s.events_outstanding += static_cast<int>(dp->outstanding.size());
    }
    return s;
}

DeviceManager &devices() {
    static DeviceManager *const instance = new DeviceManager(driver());
    return *instance;
}

// ------------------------------------------------------------ ScopedContext

void wait_legacy(DeviceManager &dm, int ordinal) {
    ScopedContext scope(dm, ordinal);
    if (scope.ok()) (void)dm.drv().api().cuStreamSynchronize(CU_STREAM_LEGACY);
}

ScopedContext::ScopedContext(DeviceManager &dm, int ordinal) {
    CUcontext ctx = nullptr;
    status_ = dm.primary_context(ordinal, &ctx);
    if (status_ == CUDA_SUCCESS) enter(dm.drv().api(), ctx);
}

void ScopedContext::enter(const Api &api, CUcontext ctx) noexcept {
    api_ = &api;
    ctx_ = ctx;
    if (ctx == nullptr) return;
    CUcontext cur = nullptr;
    status_ = api.cuCtxGetCurrent(&cur);
    if (status_ != CUDA_SUCCESS || cur == ctx) return;
    status_ = api.cuCtxPushCurrent(ctx);
    pushed_ = status_ == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
    if (pushed_) {
        CUcontext popped = nullptr;
        api_->cuCtxPopCurrent(&popped);
    }
}

} // namespace gdrpipe::cuda
