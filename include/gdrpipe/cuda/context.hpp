// Devices, primary contexts, streams and events: the one place that owns them.
//
// For each device ordinal the manager lazily retains the primary context,
// creates streams (a few fixed slots per device) and keeps a pool
// of CU_EVENT_DISABLE_TIMING events. shutdown() destroys the streams and
// pooled events and releases the primary contexts; the manager can be used
// again afterwards (everything is re-created lazily). All members are
// thread-safe, except that shutdown() must not race with users of the
// streams/events it destroys.
#pragma once

#include "gdrpipe/cuda/driver.hpp"

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gdrpipe::cuda {

struct DeviceProps {
    int ordinal = -1;
    CUdevice device = 0;
    std::string name;
    CUuuid uuid{};          // all zero if the driver cannot tell
    std::string pci_bus_id; // "0000:3b:00.0"
    int cc_major = 0;
    int cc_minor = 0;
};

// Counters of live resources (for tests and diagnostics).
struct DeviceStats {
    int contexts_retained = 0;
    int streams = 0;
    int events_pooled = 0;      // created and idle in the pools
    int events_outstanding = 0; // handed out by acquire_event, not yet released
};

class DeviceManager {
public:
    // Number of stream slots per device (stream(ordinal, slot)).
    // 0: synchronous copies; 1: direct path; 2, 3: staged pipeline; 4: calibration
    // (pipeline::CudaProber); 5: reductions (kReduceSlot, reduce.hpp); 6: copies
    // ordered after the legacy stream (kOrderedSlot)
    static constexpr unsigned kStreamSlots = 7;
    // The one slot whose stream is a blocking one: its work waits for the
    // context's legacy default stream, as cuMemcpy does (an application's
    // kernels and pageable copies there), without cuMemcpy's cost.
    static constexpr unsigned kOrderedSlot = 6;

    explicit DeviceManager(Driver &drv);
    ~DeviceManager(); // shutdown()
    DeviceManager(const DeviceManager &) = delete;
    DeviceManager &operator=(const DeviceManager &) = delete;

    Driver &drv() const noexcept { return drv_; }

    // Number of devices; 0 when CUDA is off.
    int count();
    // Properties of a device, null for an invalid ordinal.
    const DeviceProps *props(int ordinal);

    // The device's primary context, retained on first use.
    // Errors: CUDA_ERROR_NOT_INITIALIZED (CUDA off), CUDA_ERROR_INVALID_DEVICE.
    CUresult primary_context(int ordinal, CUcontext *out);

    // cuDeviceCanAccessPeer(dev, peer), cached; false for dev == peer or
    // invalid ordinals.
    bool can_access_peer(int dev, int peer);
    // Let `dev`'s primary context access memory of `peer` (idempotent).
    CUresult enable_peer_access(int dev, int peer);

    // Stream number `slot` (< kStreamSlots) of the device's primary context,
    // created on first use and owned by the manager: non-blocking, but for
    // kOrderedSlot.
    CUresult stream(int ordinal, unsigned slot, CUstream *out);

    // An event of the device's primary context (CU_EVENT_DISABLE_TIMING),
    // from the pool or new. Give it back with release_event().
    CUresult acquire_event(int ordinal, CUevent *out);
    void release_event(int ordinal, CUevent ev) noexcept;

    // gdrpipe's kernels in the device's primary context, each module loaded
    // on first use: the batched copy (gp_copy_batch, copy_kernel.hpp) and
    // the reduction (gp_reduce, reduce.hpp). CUDA_ERROR_NOT_SUPPORTED: built
    // without it, or it failed to load (which is remembered until
    // shutdown()).
    enum class Kernel : unsigned { copy_batch = 0, reduce = 1 };
    static constexpr unsigned kKernels = 2;
    CUresult kernel(int ordinal, Kernel k, CUfunction *out);
    CUresult copy_kernel(int ordinal, CUfunction *out) {
        return kernel(ordinal, Kernel::copy_batch, out);
    }
    // Destroy streams and pooled events, release primary contexts. Events
    // still outstanding are forgotten (a warning is logged) and are not
    // pooled again when released.
    void shutdown() noexcept;

    DeviceStats stats();

private:
    struct Device;
    Device *dev(int ordinal); // null if invalid; initialises the table
    CUresult retain_locked(Device &d);

    Driver &drv_;
    std::mutex table_mutex_;
    std::atomic<bool> table_ready_{false};
    std::vector<std::unique_ptr<Device>> devices_;
};

// The process-wide manager, bound to driver(); never destroyed (the plugin
// calls devices().shutdown() when its last user closes).
DeviceManager &devices();

// Makes a device's primary context current for the scope (push/pop), and
// restores the previous one. Does nothing when it is already current.
class ScopedContext {
public:
    ScopedContext(DeviceManager &dm, int ordinal);
    explicit ScopedContext(int ordinal) : ScopedContext(devices(), ordinal) {}
    // Make `ctx` current for the scope (a null ctx does nothing).
    ScopedContext(const Api &api, CUcontext ctx) { enter(api, ctx); }
    ~ScopedContext();
    ScopedContext(const ScopedContext &) = delete;
    ScopedContext &operator=(const ScopedContext &) = delete;

    bool ok() const noexcept { return status_ == CUDA_SUCCESS; }
    CUresult status() const noexcept { return status_; }
    CUcontext context() const noexcept { return ctx_; }

private:
    void enter(const Api &api, CUcontext ctx) noexcept;

    const Api *api_ = nullptr;
    CUcontext ctx_ = nullptr;
    bool pushed_ = false;
    CUresult status_ = CUDA_SUCCESS;
};

// Waits for the legacy stream of a device's primary context. Pool and VMM
// memory cannot carry CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, so an application's
// last copy into (or out of) it may still be in flight there (a pageable
// cuMemcpyHtoD returns before its DMA is done) while gdrpipe's copies run on
// other streams: stale data on the GPU machines without this wait.
void wait_legacy(DeviceManager &dm, int ordinal);

} // namespace gdrpipe::cuda
